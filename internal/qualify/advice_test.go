package qualify_test

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A campaign's look at production before it starts: production is a real
// fake engine that requires a key the profile does not send. The campaign
// says production is not ready, and why in the words of llm.Advice: the
// profile sends no key, and where to set one.
func TestCampaignSaysProductionRefusesTheKey(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	prod := exec.Command(fakeEngine, "--port", strconv.Itoa(e.prodPort), "--model", "prod-model", "--reply", "READY",
		"--api-key", "sk-production-key-5555", "--require-api-key")
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Process.Kill(); prod.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(e.prodPort)); err == nil {
			c.Close()
			break
		}
		if i > 200 {
			t.Fatal("the fake production did not listen")
		}
		time.Sleep(25 * time.Millisecond)
	}
	plan := e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n")
	_, out, errs := runHiro(t, e, "qualify", plan)
	for _, want := range []string{
		"production prod is not ready at http://127.0.0.1:" + strconv.Itoa(e.prodPort) + " before the campaign",
		"the server refused the request (HTTP 401: no valid key) and profile prod sends no API key: set api_key_env",
	} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("qualify output lacks %q:\n%s\n%s", want, out, errs)
		}
	}
	if strings.Contains(out+errs, "sk-production-key-5555") {
		t.Fatal("the key was printed")
	}
}
