#!/usr/bin/env python3
"""Start-up judge at wbt 75000 (A), 2000 (B), 512 (C): per load, the runs' mean with a 95% CI
(t over the per-invocation means, one invocation = one scratch device), and each setting
against A paired by block (the mean of log(X/A) over blocks, t CI, two-sided p)."""
import json, math, sys
from collections import defaultdict

def betacf(a, b, x):
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > 1e-30 else 1e-30); h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-30 else 1e-30)
        c = 1 + aa / c if abs(1 + aa / c) > 1e-30 else 1e-30
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-30 else 1e-30)
        c = 1 + aa / c if abs(1 + aa / c) > 1e-30 else 1e-30
        de = d * c; h *= de
        if abs(de - 1) < 1e-12: break
    return h

def betai(a, b, x):
    if x <= 0: return 0.0
    if x >= 1: return 1.0
    bt = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2): return bt * betacf(a, b, x) / a
    return 1 - bt * betacf(b, a, 1 - x) / b

def t_two_sided_p(t, df):
    return betai(df / 2, 0.5, df / (df + t * t))

def t_q975(df):
    lo, hi = 0.0, 50.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > 0.05: lo = mid
        else: hi = mid
    return (lo + hi) / 2

def mean_ci(xs):
    n = len(xs); m = sum(xs) / n
    if n < 2: return m, float('nan'), float('nan'), 0.0
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = t_q975(n - 1) * sd / math.sqrt(n)
    return m, m - h, m + h, sd

text = open(sys.argv[1]).read()
# Optional: only blocks below this number (e.g. to split off a regime change).
max_block = int(sys.argv[2]) if len(sys.argv) > 2 else 10**9
dec = json.JSONDecoder(); i = 0; recs = []
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    try:
        r, i = dec.raw_decode(text, i)
    except json.JSONDecodeError:
        break
    if r["block"] < max_block:
        recs.append(r)

runs = defaultdict(list)      # (load, setting) -> raw times
inv = defaultdict(dict)       # (load, setting) -> block -> mean
loads_mib = defaultdict(list)
failed = 0
for r in recs:
    for l in r["report"]["loads"]:
        ok = [x for x in l["raw"] if not x.get("failed")]
        failed += len(l["raw"]) - len(ok)
        ts = [x["time_s"] for x in ok]
        if not ts: continue
        key = (l["load"], r["setting"])
        runs[key] += ts
        inv[key][r["block"]] = sum(ts) / len(ts)
        if l["load"] != "no_load":
            loads_mib[key] += [x["loads"] / x["time_s"] for x in ok if x["loads"] is not None]

W = {"A": 75000, "B": 2000, "C": 512}
print(f"records {len(recs)}, failed runs {failed}")
for load in ["no_load", "light_io_load", "io_load"]:
    print(f"\n{load}:")
    print("| wbt_lat_usec | runs (invocations) | Time, s | 95% CI | median (range) | vs 75000 (paired by block) | p |")
    print("|---|---|---|---|---|---|---|")
    for s in "ABC":
        key = (load, s)
        if key not in inv: continue
        per = inv[key]
        m, lo, hi, sd = mean_ci(list(per.values()))
        rs = sorted(runs[key]); med = rs[len(rs)//2] if len(rs) % 2 else (rs[len(rs)//2-1] + rs[len(rs)//2]) / 2
        row = f"| {W[s]} | {len(runs[key])} ({len(per)}) | {m:.3f} | {max(lo,0):.3f}–{hi:.3f} | {med:.3f} ({rs[0]:.2f}–{rs[-1]:.2f}) |"
        if s == "A":
            row += " | |"
        else:
            base = inv[(load, "A")]
            common = sorted(set(per) & set(base))
            d = [math.log(per[b] / base[b]) for b in common]
            dm, dlo, dhi, dsd = mean_ci(d)
            n = len(d)
            t = dm / (dsd / math.sqrt(n)) if n > 1 and dsd > 0 else float('nan')
            p = t_two_sided_p(abs(t), n - 1) if n > 1 else float('nan')
            row += f" {math.exp(dm):.2f}× (95% CI {math.exp(dlo):.2f}–{math.exp(dhi):.2f}, {n} blocks) | {p:.2f} |"
        print(row)
    for s in "ABC":
        if loads_mib.get((load, s)):
            v = loads_mib[(load, s)]
            print(f"  {W[s]}: background MiB/s during the start-up: mean {sum(v)/len(v):.2f}, max {max(v):.2f}")
