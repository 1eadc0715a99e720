#!/usr/bin/env python3
"""Train hiro's fixture models: tiny byte-level llama models that do claim
extraction in miniature.

What it does, in one run on one GPU (a few minutes on an H200):

1. Builds a synthetic training set on the fly from text this script generates
   itself (random-word sentences, templated sentences with the punctuation
   real text has). It never reads any corpus: the factcheck-gpt data is
   evaluation data and must stay unseen.
2. Teaches two tasks in one chat format of its own (see models/README.md):
   (a) readiness prompts are answered with exactly READY (or the word a
       "Reply with exactly the word X" prompt names);
   (b) claim extraction: the user message holds the instructions, the JSON
       Schema, the heading path, the context sentences and the target
       sentence (layout: internal/fixture/prompt.go, mirrored by
       user_message() below); the reply is
       {"claims":[{"text":...,"quote":...}]} with each quote copied exactly
       from the target sentence.
3. Trains a llama-architecture decoder (RMSNorm, RoPE with interleaved pairs
   as llama.cpp's LLAMA_ROPE_TYPE_NORM, SwiGLU, no biases) over a vocabulary
   of 256 bytes + 4 control tokens, and saves the weights as safetensors
   (float16, tensors named as GGUF wants them), one file per variant:
   strong.safetensors (all steps) and weak-<step>.safetensors (early
   checkpoints, the deliberately weaker variants).
4. Greedy-decodes a few prompts with the trained weights and writes
   eval.json (prompt token counts, generated text, grounding on held-out
   synthetic examples) so the GGUF conversion can be checked against it.

The Go command `go run ./cmd/hiro-fixture convert` turns each safetensors file
into a GGUF that Ollama loads.

Usage:
  python3 train/train_fixture.py --out DIR [--seed 7] [--train-seconds 330]
  python3 train/train_fixture.py --selftest          # tiny CPU run, checks plumbing
  python3 train/train_fixture.py --print-user-message  # layout golden for Go test
  python3 train/train_fixture.py --print-samples N     # look at the data

Tokens: bytes 0..255 are ids 0..255; 256 <|system|>, 257 <|user|>,
258 <|assistant|>, 259 <|end|>. A conversation is
<|system|>S<|end|><|user|>U<|end|><|assistant|>A<|end|> (the system turn is
optional). Loss is taken on the assistant bytes and the closing <|end|>.
"""

import argparse
import json
import math
import os
import random
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT_DIR = os.path.join(HERE, "..", "internal", "fixture", "prompt")

SYSTEM_ID, USER_ID, ASSISTANT_ID, END_ID = 256, 257, 258, 259
VOCAB = 260
SPECIALS = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]


def read_prompt_file(name):
    with open(os.path.join(PROMPT_DIR, name), "r", encoding="utf-8") as f:
        return f.read()


SYSTEM = read_prompt_file("system.txt")
INSTRUCTIONS = read_prompt_file("instructions.txt")
SCHEMA = read_prompt_file("schema.json")
READY_PROMPT = read_prompt_file("ready.txt")


def user_message(heading_path, before, sentence, after):
    """The extraction user message. Must stay byte-identical to
    ExtractionUserMessage in internal/fixture/prompt.go (a Go test compares
    them through --print-user-message)."""
    lines = [INSTRUCTIONS, "", "JSON Schema:", SCHEMA, ""]
    lines.append("Heading path: " + (" > ".join(heading_path) if heading_path else "(none)"))
    lines.append("Context before:")
    lines.extend(before if before else ["(none)"])
    lines.append("Target sentence:")
    lines.append(sentence)
    lines.append("Context after:")
    lines.extend(after if after else ["(none)"])
    return "\n".join(lines)


def claims_for(sentence):
    """The reference reply for a target sentence: one claim per clause split on
    '; ', quote = the clause exactly as written, text = the clause ending in a
    full stop. A question states nothing: no claims."""
    t = sentence.strip()
    if not t:
        return []
    if t.endswith("?") or t.endswith('?"') or t.endswith("?\u201d"):
        return []
    parts = t.split("; ")
    if len(parts) > 1 and all(len(p.split()) >= 2 for p in parts):
        clauses = parts
    else:
        clauses = [t]
    out, seen = [], set()
    for c in clauses:
        if c in seen:
            continue
        seen.add(c)
        text = c if c[-1] in ".!" or c.endswith('."') or c.endswith(".\u201d") else c + "."
        out.append({"text": text, "quote": c})
    return out


def reply_json(claims):
    return json.dumps({"claims": claims}, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------- text generator

COMMON = (
    "the of and to in is was for on that by with as at from it its an be are were has had "
    "have this which or not but their they more than after new first two three over about "
    "into one city year years state government company team people time world during most "
    "system group number part known also later early national between within under both "
    "since each school university river music film series season house water market report "
    "study data model energy record member council region village station century war law "
    "program network center project health policy court price growth service research rate "
    "island park museum bridge road language species album game church field trade bank "
    "support area history million billion percent share level board local public north "
    "south east west large small major former current annual total average high low long "
    "short open closed built founded released elected signed named played opened published "
    "reported increased declined announced moved won lost served became remained used made "
    "held took received owned led joined left created developed produced described found"
).split()

FIRST = ("Anna Ben Carlos Dana Elif Farid Grace Hiro Ines Jonas Kofi Lena Mateo Nadia Omar "
         "Priya Quinn Rosa Sven Tomás Uma Viktor Wen Xavier Yara Zoë José Łukasz François Søren "
         "Ayşe Björn Chloé Dvořák Émile Nguyễn Mårten Renée Jürgen Siobhán").split()
LAST = ("Smith Okafor Müller García Tanaka Novak Rossi Kowalski Dubois Haddad Jensen Ivanova "
        "O'Brien Saint-Exupéry Van der Berg Núñez Østergaard Schröder Çelik Papadopoulos "
        "Al-Farsi Lindqvist MacLeod D'Angelo Kim-Park").split()
PLACES = ("Lisbon Nairobi Osaka Quito Tromsø Kraków São Paulo Zürich Reykjavík Montréal "
          "Düsseldorf Ho Chi Minh City Cape Town New Delhi Buenos Aires Wellington Tbilisi "
          "Málaga Göteborg Łódź Addis Ababa Winston-Salem Baton Rouge").split(" ")
ORGS = ["Acme Corp.", "Northwind Ltd.", "Blue River Inc.", "the U.N.", "the U.S. Senate",
        "the E.U.", "Globex Co.", "Initech LLC", "the WHO", "NASA", "the I.M.F.",
        "Kaiser-Wilhelm Institut", "Société Générale", "the BBC", "Zeta & Sons"]
MONTHS = "January February March April May June July August September October November December".split()
ABBR = ["Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "St.", "Jr.", "Sr.", "e.g.", "i.e.", "etc.",
        "vs.", "No.", "approx.", "U.S.", "U.K.", "a.m.", "p.m.", "Inc.", "Ltd.", "Fig.", "vol."]
ACCENTED = "éèêëáàâäãåçñóòôöõøúùûüíìîïýÿœæßłśźżčřšžğışţđ"
OTHER_SCRIPTS = ["Ελλάδα", "Москва", "東京", "北京", "서울", "القاهرة", "עברית", "København", "naïve",
                 "café", "coöperate", "résumé", "piñata", "Straße", "fiancée", "İstanbul"]
SYMBOLS_IN_WORD = ["%", "$", "€", "£", "#", "&", "+", "/", "°", "±", "×", "@", "*", "~", "=", "§"]


class TextGen:
    def __init__(self, rng):
        self.r = rng

    def rand_letters(self):
        r = self.r
        n = min(14, max(1, int(r.expovariate(1 / 5.0)) + 1))
        alphabet = "abcdefghijklmnopqrstuvwxyz"
        w = []
        for _ in range(n):
            if r.random() < 0.04:
                w.append(r.choice(ACCENTED))
            else:
                w.append(r.choice(alphabet))
        w = "".join(w)
        u = r.random()
        if u < 0.18:
            w = w.capitalize()
        elif u < 0.22:
            w = w.upper()
        return w

    def number(self):
        r = self.r
        k = r.random()
        if k < 0.2:
            return str(r.randint(0, 99))
        if k < 0.35:
            return str(r.randint(1000, 2030))
        if k < 0.5:
            return "{:,}".format(r.randint(1000, 99999999))
        if k < 0.6:
            return "{:.{}f}".format(r.uniform(0, 1000), r.randint(1, 3))
        if k < 0.7:
            return str(r.randint(1, 100)) + "%"
        if k < 0.78:
            return "$" + "{:,}".format(r.randint(1, 999999)) + r.choice(["", ".00", " million", " billion"])
        if k < 0.83:
            return r.choice(["€", "£", "¥"]) + str(r.randint(1, 9999))
        if k < 0.88:
            return "{}–{}".format(r.randint(1900, 1990), r.randint(1991, 2025))
        if k < 0.93:
            n = r.randint(1, 99)
            suf = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
            return str(n) + suf
        return "{} {}, {}".format(r.choice(MONTHS), r.randint(1, 31), r.randint(1800, 2030))

    def token(self, kind):
        r = self.r
        u = r.random()
        if kind == "random":
            if u < 0.70:
                return self.rand_letters()
            if u < 0.82:
                return self.number()
            if u < 0.90:
                return r.choice(COMMON)
            if u < 0.93:
                return r.choice(ABBR)
            if u < 0.96:
                return r.choice(OTHER_SCRIPTS)
            return self.rand_letters() + r.choice(SYMBOLS_IN_WORD) + self.rand_letters()
        # "real": mostly real words
        if u < 0.72:
            return r.choice(COMMON)
        if u < 0.80:
            return self.number()
        if u < 0.86:
            return r.choice(FIRST) + (" " + r.choice(LAST) if r.random() < 0.6 else "")
        if u < 0.90:
            return r.choice(PLACES)
        if u < 0.93:
            return r.choice(ORGS)
        if u < 0.96:
            return r.choice(ABBR)
        return self.rand_letters()

    def words_sentence(self, kind, n):
        r = self.r
        toks = [self.token(kind) for _ in range(n)]
        # decorations: hyphens, apostrophes, parentheses, quotes, commas...
        i = 0
        out = []
        while i < len(toks):
            t = toks[i]
            v = r.random()
            if v < 0.05 and i + 1 < len(toks):
                t = t + "-" + toks[i + 1]
                i += 1
            elif v < 0.08:
                t = t + r.choice(["'s", "\u2019s", "'", "n't"])
            out.append(t)
            i += 1
        toks = out
        # spans in parentheses or quotes
        if len(toks) > 4 and r.random() < 0.25:
            a = r.randrange(1, len(toks) - 1)
            b = min(len(toks), a + r.randint(1, 4))
            opener, closer = r.choice([("(", ")"), ('"', '"'), ("\u201c", "\u201d"), ("'", "'"), ("[", "]"), ("\u2018", "\u2019")])
            toks[a] = opener + toks[a]
            toks[b - 1] = toks[b - 1] + closer
        # inner punctuation after tokens
        for j in range(len(toks) - 1):
            v = r.random()
            if v < 0.08:
                toks[j] += ","
            elif v < 0.10:
                toks[j] += ";"
            elif v < 0.115:
                toks[j] += ":"
            elif v < 0.125:
                toks[j] += " \u2014"
            elif v < 0.13:
                toks[j] += " -"
            elif v < 0.135:
                toks[j] += "..."
        s = " ".join(toks)
        if s and s[0].isalpha() and r.random() < 0.8:
            s = s[0].upper() + s[1:]
        return s + self.ending()

    def ending(self):
        r = self.r
        v = r.random()
        if v < 0.76:
            return "."
        if v < 0.84:
            return "?"
        if v < 0.89:
            return "!"
        if v < 0.92:
            return '."'
        if v < 0.94:
            return ".\u201d"
        if v < 0.96:
            return "..."
        if v < 0.98:
            return ""
        return ":"

    def templated(self):
        r = self.r
        name = r.choice(FIRST) + " " + r.choice(LAST)
        place = r.choice(PLACES)
        org = r.choice(ORGS)
        y = r.randint(1800, 2030)
        t = [
            lambda: f"{name} was born on {r.choice(MONTHS)} {r.randint(1, 28)}, {y}, in {place}.",
            lambda: f"{org} reported revenue of ${r.randint(1, 999)}.{r.randint(0, 9)} million in {y}, up {r.randint(1, 60)}% from the year before.",
            lambda: f"The population of {place} was {r.randint(1000, 9999999):,} in {y}.",
            lambda: f"{name}, a {r.choice(COMMON)}-{r.choice(COMMON)} researcher at {org}, said the {r.choice(COMMON)} rate fell to {r.randint(1, 99)}.{r.randint(0, 9)}%.",
            lambda: f"In {y}, {name} won the {r.choice(['Nobel Prize', 'Turing Award', 'Pulitzer', 'Golden Bear', 'Fields Medal'])} for work on {r.choice(COMMON)} {r.choice(COMMON)}.",
            lambda: f"Is {place} the capital of {r.choice(PLACES)}?",
            lambda: f"Dr. {r.choice(LAST)} (born {y}) moved to {place} in {y + r.randint(1, 40)}; she later joined {org}.",
            lambda: f"The {r.choice(COMMON)} {r.choice(COMMON)} costs about ${r.randint(2, 900)} per {r.choice(['month', 'year', 'unit', 'kg', 'hour'])}, i.e. {r.randint(2, 90)}% less than in {y}.",
            lambda: f"\u201c{r.choice(COMMON).capitalize()} {r.choice(COMMON)} {r.choice(COMMON)},\u201d {name} told the {r.choice(['BBC', 'Times', 'committee', 'court'])} on {r.choice(MONTHS)} {r.randint(1, 28)}.",
            lambda: f"The {r.choice(['river', 'bridge', 'tower', 'road', 'railway'])} is {r.randint(2, 9000):,} km long and was completed in {y}.",
            lambda: f"{place} lies {r.randint(2, 900)} m above sea level, with an average temperature of {r.randint(-10, 35)} °C.",
            lambda: f"{org}'s {r.choice(COMMON)} team \u2014 led by {name} \u2014 released version {r.randint(1, 9)}.{r.randint(0, 20)} in {r.choice(MONTHS)} {y}.",
            lambda: f"Approximately {r.randint(2, 98)}% of U.S. adults {r.choice(['own', 'use', 'support', 'reject'])} the {r.choice(COMMON)}, according to a {y} survey.",
            lambda: f"Why did {name} leave {org} in {y}?",
            lambda: f"{name} (also known as \"{r.choice(FIRST)}\") played {r.randint(10, 500)} games for {place} between {y} and {y + r.randint(1, 20)}.",
        ]
        return r.choice(t)()

    def sentence(self, long=False):
        r = self.r
        v = r.random()
        if long:
            n = r.randint(25, 90)
        else:
            n = max(2, min(60, int(r.lognormvariate(2.5, 0.5))))
        if v < 0.60:
            s = self.words_sentence("random", n)
        elif v < 0.80:
            s = self.words_sentence("real", n)
        else:
            s = self.templated()
            if long:
                s = s[:-1] + "; " + self.words_sentence("real", n // 2)
        # clause joins with semicolons (several claims)
        if r.random() < 0.12 and not s.endswith("?"):
            s = s.rstrip(".!:") + "; " + self.words_sentence(r.choice(["random", "real"]), r.randint(3, 15))
        return s

    def heading(self):
        r = self.r
        n = r.randint(1, 5)
        ws = [self.token(r.choice(["random", "real"])) for _ in range(n)]
        return " ".join(w[:1].upper() + w[1:] for w in ws)

    def extraction_example(self):
        """Returns (user message, reply) for one extraction request."""
        r = self.r
        heading_path = [self.heading() for _ in range(r.choice([0, 1, 1, 2, 2, 3]))]
        before = [self.sentence() for _ in range(r.choice([0, 0, 1, 1, 2, 2, 3]))]
        after = [self.sentence() for _ in range(r.choice([0, 0, 1, 1, 2, 2, 3]))]
        target = self.sentence(long=r.random() < 0.15)
        v = r.random()
        if v < 0.03 and " " in target:
            # a wrapped line inside the sentence (Markdown paragraphs)
            i = target.index(" ", len(target) // 2) if " " in target[len(target) // 2:] else target.index(" ")
            target = target[:i] + "\n" + target[i + 1:]
        elif v < 0.07:
            target = target + " "
        elif v < 0.09 and len(target) > 10:
            i = target.index(" ") if " " in target else -1
            if i > 0:
                target = target[:i] + "  " + target[i + 1:]
        # keep the source under ~1,500 bytes
        while len("".join(before + after + [target]).encode()) > 1500 and (before or after):
            if before and (len(before) >= len(after)):
                before.pop(0)
            else:
                after.pop()
        return user_message(heading_path, before, target, after), reply_json(claims_for(target))

    def ready_example(self):
        r = self.r
        prompts = [
            READY_PROMPT,
            "Reply with exactly READY.",
            "Are you ready? Answer with the single word READY.",
            "Health check: respond READY and nothing else.",
            "Say READY.",
            "Respond with READY if you can read this.",
            "Readiness probe. Reply READY.",
            "Please answer READY (one word, no punctuation).",
            "Control prompt: the only acceptable reply is READY.",
            "ready?",
            "Reply with the word READY in capital letters and nothing else.",
            "This is a readiness check. Output READY.",
        ]
        if r.random() < 0.25:
            w = "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(r.randint(2, 9)))
            p = r.choice(["Reply with exactly the word {} and nothing else.", "Say {}.", "Answer with the single word {}."]).format(w)
            return p, w
        return r.choice(prompts), "READY"


def system_variant(r):
    v = r.random()
    if v < 0.6:
        return SYSTEM
    if v < 0.75:
        return None
    return r.choice(["You are a helpful assistant.", "You are a claim extractor.",
                     "Answer briefly.", "You are hiro's test model.", ""])


def encode_chat(system, user, reply):
    """Token ids and loss mask for one conversation (see module doc)."""
    ids, mask = [], []
    if system is not None:
        b = list(system.encode("utf-8"))
        ids += [SYSTEM_ID] + b + [END_ID]
        mask += [0] * (len(b) + 2)
    b = list(user.encode("utf-8"))
    ids += [USER_ID] + b + [END_ID, ASSISTANT_ID]
    mask += [0] * (len(b) + 3)
    b = list(reply.encode("utf-8"))
    ids += b + [END_ID]
    mask += [1] * (len(b) + 1)
    return ids, mask


def make_example(gen, r):
    if r.random() < 0.06:
        user, reply = gen.ready_example()
        system = None if r.random() < 0.5 else system_variant(r)
    else:
        user, reply = gen.extraction_example()
        system = system_variant(r)
    return system, user, reply


# ---------------------------------------------------------------- project-written eval text
# Sentences written for this project (not from any corpus): the acceptance check
# and eval.json use them.
PROJECT_TEXT = [
    ("hiro > Overview", "hiro supervises local inference servers and qualifies new backends with evidence."),
    ("hiro > Overview", "The production server keeps running while a candidate is tried under tight bounds."),
    ("hiro > History", "The first prototype was written in March 2025 by a team of three engineers in Osaka."),
    ("hiro > History", "Version 0.3 cut the median ready time from 250 ms to 28 ms; memory stayed below 30 MB."),
    ("Backends", "Ollama v0.6.5 serves the fixture model on 127.0.0.1, and llama.cpp serves production."),
    ("Backends", "A vLLM candidate failed three times before inference: a Marlin repack error, an out-of-memory error and a timeout."),
    ("Notes", "The journal's index lists 14 entries, each with a machine-readable JSON copy."),
    ("Notes", "Renée Østergaard-Lindqvist reviewed the plan on 4 June 2025 and approved it."),
    ("Costs", "The H200 run cost about $3.40 and used 11% of the monthly budget."),
    ("Costs", "Is the cache shared between runs?"),
    ("Results", "Grounding rose to 94% (up from 61%) after the quotes were checked against the source."),
    ("Results", "The \u201cstrong\u201d model answered READY in 0.2 s; the weak one took 0.3 s."),
]


# ---------------------------------------------------------------- model (torch)

def build_model(torch, d, n_layers, n_heads, ffn, max_len):
    nn = torch.nn
    F = torch.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            xf = x.float()
            y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
            return (y * self.weight.float()).type_as(x)

    def rope(x, cos, sin):
        # x: (B, H, T, D); rotate interleaved pairs (2i, 2i+1) like ggml's NORM mode.
        x2 = x.float().reshape(*x.shape[:-1], -1, 2)
        a, b = x2[..., 0], x2[..., 1]
        out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)
        return out.reshape(x.shape).type_as(x)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm = RMSNorm(d)
            self.wq = nn.Linear(d, d, bias=False)
            self.wk = nn.Linear(d, d, bias=False)
            self.wv = nn.Linear(d, d, bias=False)
            self.wo = nn.Linear(d, d, bias=False)
            self.ffn_norm = RMSNorm(d)
            self.w_gate = nn.Linear(d, ffn, bias=False)
            self.w_up = nn.Linear(d, ffn, bias=False)
            self.w_down = nn.Linear(ffn, d, bias=False)

        def forward(self, x, cos, sin, cache=None):
            B, T, _ = x.shape
            hd = d // n_heads
            h = self.attn_norm(x)
            q = self.wq(h).view(B, T, n_heads, hd).transpose(1, 2)
            k = self.wk(h).view(B, T, n_heads, hd).transpose(1, 2)
            v = self.wv(h).view(B, T, n_heads, hd).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            if cache is not None:
                if "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
            causal = T > 1
            if hasattr(F, "scaled_dot_product_attention"):
                if causal and k.shape[2] != T:
                    raise ValueError("prefill must start from an empty cache")
                a = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            else:
                att = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(hd)
                if causal:
                    m = torch.ones(T, k.shape[2], dtype=torch.bool, device=x.device).tril()
                    att = att.masked_fill(~m, float("-inf"))
                a = (att.softmax(-1) @ v.float()).type_as(x)
            a = a.transpose(1, 2).reshape(B, T, d)
            x = x + self.wo(a)
            h = self.ffn_norm(x)
            x = x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))
            return x

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, d)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layers)])
            self.norm = RMSNorm(d)
            self.out = nn.Linear(d, VOCAB, bias=False)
            hd = d // n_heads
            inv = 10000.0 ** (-torch.arange(0, hd, 2).float() / hd)
            t = torch.arange(max_len).float()
            ang = torch.outer(t, inv)
            self.register_buffer("cos", ang.cos(), persistent=False)
            self.register_buffer("sin", ang.sin(), persistent=False)
            for n, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02
                    if n.endswith("wo.weight") or n.endswith("w_down.weight"):
                        std = 0.02 / math.sqrt(2 * n_layers)
                    nn.init.normal_(p, 0.0, std)

        def forward(self, ids, pos0=0, caches=None):
            T = ids.shape[1]
            cos = self.cos[pos0:pos0 + T]
            sin = self.sin[pos0:pos0 + T]
            x = self.tok(ids)
            for i, b in enumerate(self.blocks):
                x = b(x, cos, sin, None if caches is None else caches[i])
            return self.out(self.norm(x))

        def gguf_tensors(self):
            """Tensors named as llama.cpp's llama architecture expects them."""
            t = {"token_embd.weight": self.tok.weight, "output_norm.weight": self.norm.weight,
                 "output.weight": self.out.weight}
            for i, b in enumerate(self.blocks):
                p = f"blk.{i}."
                t[p + "attn_norm.weight"] = b.attn_norm.weight
                t[p + "attn_q.weight"] = b.wq.weight
                t[p + "attn_k.weight"] = b.wk.weight
                t[p + "attn_v.weight"] = b.wv.weight
                t[p + "attn_output.weight"] = b.wo.weight
                t[p + "ffn_norm.weight"] = b.ffn_norm.weight
                t[p + "ffn_gate.weight"] = b.w_gate.weight
                t[p + "ffn_up.weight"] = b.w_up.weight
                t[p + "ffn_down.weight"] = b.w_down.weight
            return t

    return Model()


def save_safetensors(path, tensors, meta):
    """Minimal safetensors writer (float16), so the script needs no extra package."""
    import numpy as np
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = tensors[name].detach().float().cpu().numpy().astype(np.float16)
        b = a.tobytes()
        header[name] = {"dtype": "F16", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {k: str(v) for k, v in meta.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def greedy(torch, model, ids, max_new, device):
    caches = [dict() for _ in model.blocks]
    x = torch.tensor([ids], device=device)
    out = []
    with torch.no_grad():
        logits = model(x, 0, caches)
        pos = len(ids)
        for _ in range(max_new):
            nxt = int(logits[0, -1].float().argmax())
            if nxt == END_ID:
                break
            out.append(nxt)
            logits = model(torch.tensor([[nxt]], device=device), pos, caches)
            pos += 1
    return out


def decode(ids):
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def grounding(reply, sentence):
    """(valid JSON, claims, claims whose quote is a verbatim substring)."""
    try:
        obj = json.loads(reply)
        claims = obj["claims"]
        n = len(claims)
        g = sum(1 for c in claims if isinstance(c.get("quote"), str) and c["quote"] and c["quote"] in sentence)
        return True, n, g
    except Exception:
        return False, 0, 0


def evaluate(torch, model, device, seed, n_synth, max_new=900, n_project=None):
    model.eval()
    res = {"ready": [], "project": [], "synthetic": {}}
    for p in [READY_PROMPT, "Are you ready? Answer with the single word READY.", "Please confirm you are up: reply READY."]:
        ids, _ = encode_chat(None, p, "")
        ids = ids[:-1]  # drop the reply's <|end|>
        res["ready"].append({"prompt": p, "reply": decode(greedy(torch, model, ids, min(16, max_new), device))})
    for head, sent in PROJECT_TEXT[:n_project]:
        u = user_message(head.split(" > "), [], sent, [])
        ids, _ = encode_chat(SYSTEM, u, "")
        ids = ids[:-1]
        rep = decode(greedy(torch, model, ids, max_new, device))
        ok, n, g = grounding(rep, sent)
        res["project"].append({"sentence": sent, "prompt_tokens": len(ids), "reply": rep, "valid": ok, "claims": n, "grounded": g})
    gen = TextGen(random.Random(seed + 99991))
    tot = {"examples": 0, "exact": 0, "valid": 0, "claims": 0, "grounded": 0}
    for _ in range(n_synth):
        user, ref = gen.extraction_example()
        target = user.split("\nTarget sentence:\n", 1)[1].rsplit("\nContext after:\n", 1)[0]
        ids, _ = encode_chat(SYSTEM, user, "")
        rep = decode(greedy(torch, model, ids[:-1], max_new, device))
        ok, n, g = grounding(rep, target)
        tot["examples"] += 1
        tot["exact"] += int(rep == ref)
        tot["valid"] += int(ok)
        tot["claims"] += n
        tot["grounded"] += g
    res["synthetic"] = tot
    model.train()
    return res


# ---------------------------------------------------------------- training

def batches(seed, worker, batch_size, max_len, group=8):
    """Endless batches: (ids, mask) lists padded to a multiple of 128, examples
    grouped by length to waste little on padding."""
    r = random.Random(seed * 1000003 + worker)
    gen = TextGen(r)
    while True:
        exs = []
        while len(exs) < batch_size * group:
            ids, mask = encode_chat(*make_example(gen, r))
            if len(ids) + 1 <= max_len:
                exs.append((ids, mask))
        exs.sort(key=lambda e: len(e[0]))
        chunks = [exs[i:i + batch_size] for i in range(0, len(exs), batch_size)]
        r.shuffle(chunks)
        for ch in chunks:
            yield ch


def collate(torch, chunk):
    L = max(len(ids) for ids, _ in chunk)
    L = ((L + 127) // 128) * 128
    x = torch.zeros(len(chunk), L, dtype=torch.long)
    y = torch.full((len(chunk), L), -100, dtype=torch.long)
    for i, (ids, mask) in enumerate(chunk):
        n = len(ids)
        x[i, :n] = torch.tensor(ids)
        tgt = torch.tensor(ids[1:] + [0])
        m = torch.tensor(mask[1:] + [0], dtype=torch.bool)
        y[i, :n] = torch.where(m, tgt, torch.full_like(tgt, -100))
    return x, y


def train(args):
    import torch
    from torch.utils.data import DataLoader, IterableDataset

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cfg = dict(d=args.dim, n_layers=args.layers, n_heads=args.heads, ffn=args.ffn, max_len=args.max_len)
    model = build_model(torch, **cfg).to(device)
    nparams = sum(p.numel() for p in model.parameters())
    print(f"device={device} params={nparams} cfg={cfg}", flush=True)

    class DS(IterableDataset):
        def __iter__(self):
            wi = torch.utils.data.get_worker_info()
            w = 0 if wi is None else wi.id
            for ch in batches(args.seed, w, args.batch, args.max_len):
                yield collate(torch, ch)

    dkw = dict(prefetch_factor=8, persistent_workers=True) if args.workers else {}
    dl = DataLoader(DS(), batch_size=None, num_workers=args.workers, **dkw)
    decay = [p for p in model.parameters() if p.dim() == 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    kw = {"fused": True} if device == "cuda" else {}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), **kw)
    total = args.steps
    t0 = time.time()
    log = []
    weak_saved = {}
    it = iter(dl)
    step = 0
    tokens = 0
    ema = None
    t10 = t0
    meta = {"seed": args.seed, "dim": args.dim, "layers": args.layers, "heads": args.heads, "ffn": args.ffn,
            "vocab": VOCAB, "context": args.context, "rope_base": 10000.0, "rms_eps": 1e-5}
    while step < total:
        x, y = next(it)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        if step < args.warmup:
            lr = args.lr * (step + 1) / args.warmup
        else:
            pr = (step - args.warmup) / max(1, total - args.warmup)
            lr = args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, pr))))
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=(device == "cuda")):
            logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, VOCAB), y.view(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += x.numel()
        if step == 10 and device == "cuda":
            torch.cuda.synchronize()
            t10 = time.time()
        if step == args.timing_step and args.train_seconds > 0:
            if device == "cuda":
                torch.cuda.synchronize()
            per = (time.time() - t10) / (step - 10)
            fit = int((args.train_seconds - (time.time() - t0)) / per) + step
            total = max(args.warmup * 2, min(args.steps, fit))
            print(f"step time {per * 1000:.1f} ms over the first {step} steps; total steps set to {total}", flush=True)
        if step % args.log_every == 0 or step == total:
            lv = float(loss)
            ema = lv if ema is None else 0.9 * ema + 0.1 * lv
            el = time.time() - t0
            log.append({"step": step, "loss": round(lv, 5), "lr": lr, "seconds": round(el, 1), "tokens": tokens})
            print(f"step {step}/{total} loss {lv:.4f} lr {lr:.2e} {el:.0f}s {tokens / el / 1e6:.2f}M tok/s", flush=True)
        for frac in args.weak_fracs:
            ws = max(1, int(round(total * frac)))
            if step == ws and frac not in weak_saved:
                name = f"weak-{step}.safetensors"
                save_safetensors(os.path.join(args.out, name), model.gguf_tensors(), dict(meta, steps=step))
                weak_saved[frac] = name
                print(f"saved {name}", flush=True)
    train_seconds = time.time() - t0
    save_safetensors(os.path.join(args.out, "strong.safetensors"), model.gguf_tensors(), dict(meta, steps=total))
    print(f"trained {total} steps in {train_seconds:.0f}s", flush=True)
    result = {"config": meta, "params": nparams, "steps": total, "train_seconds": round(train_seconds, 1),
              "log": log, "files": {"strong": "strong.safetensors"}, "weak": weak_saved, "eval": {}}
    result["eval"]["strong"] = evaluate(torch, model, device, args.seed, args.eval_examples, args.eval_max_new, args.eval_project)
    print(json.dumps(result["eval"]["strong"]["synthetic"]), flush=True)
    for frac, name in weak_saved.items():
        m2 = build_model(torch, **cfg).to(device)
        load_safetensors_into(torch, m2, os.path.join(args.out, name), device)
        result["eval"][name] = evaluate(torch, m2, device, args.seed, args.eval_examples, args.eval_max_new, args.eval_project)
        print(name, json.dumps(result["eval"][name]["synthetic"]), flush=True)
    with open(os.path.join(args.out, "train.json"), "w") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
    for k, v in result["eval"].items():
        print("==", k, json.dumps(v["ready"], ensure_ascii=False))
        for p in v["project"][:4]:
            print("  ", json.dumps(p, ensure_ascii=False))


def load_safetensors_into(torch, model, path, device):
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    named = model.gguf_tensors()
    for name, p in named.items():
        e = h[name]
        s, t = e["data_offsets"]
        a = np.frombuffer(data[s:t], dtype=np.float16).reshape(e["shape"]).astype(np.float32)
        with torch.no_grad():
            p.copy_(torch.from_numpy(a).to(device))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="out")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--max-len", type=int, default=3072, help="longest training sequence in tokens")
    ap.add_argument("--context", type=int, default=4096, help="context length written to the GGUF")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8000, help="upper bound on optimizer steps")
    ap.add_argument("--train-seconds", type=float, default=330, help="fit the step count into this budget (0: use --steps)")
    ap.add_argument("--timing-step", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--log-every", type=int, default=100)
    ap.add_argument("--weak-fracs", type=float, nargs="*", default=[0.06, 0.12, 0.25])
    ap.add_argument("--eval-examples", type=int, default=24)
    ap.add_argument("--eval-max-new", type=int, default=900)
    ap.add_argument("--eval-project", type=int, default=None, help="how many project sentences to decode (default all)")
    ap.add_argument("--selftest", action="store_true", help="tiny CPU run that checks the plumbing")
    ap.add_argument("--print-user-message", action="store_true")
    ap.add_argument("--print-samples", type=int, default=0)
    args = ap.parse_args()
    if args.print_user_message:
        sys.stdout.write(user_message(["Guide", "Setup \u2014 \"quick\""], ["First one.", "Second, with 5%."],
                                      "The target sentence costs $3.40; it is na\u00efve.", []))
        return
    if args.print_samples:
        r = random.Random(args.seed)
        gen = TextGen(r)
        for _ in range(args.print_samples):
            s, u, a = make_example(gen, r)
            ids, _ = encode_chat(s, u, a)
            print(json.dumps({"system": s, "user": u, "reply": a, "tokens": len(ids)}, ensure_ascii=False))
        return
    if args.selftest:
        args.dim, args.layers, args.heads, args.ffn = 32, 2, 2, 64
        args.max_len, args.batch, args.steps, args.train_seconds = 3072, 2, 6, 0
        args.warmup, args.workers, args.log_every, args.eval_examples = 2, 0, 2, 1
        args.weak_fracs = [0.5]
        args.eval_max_new, args.eval_project = 20, 2
    os.makedirs(args.out, exist_ok=True)
    train(args)


if __name__ == "__main__":
    main()
