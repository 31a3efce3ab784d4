#!/usr/bin/python3
"""Capped rows, blocked by round: paired t-test on log(run mean V / run mean 75000) within each round."""
import glob, re, math
from scipy import stats
rm = {}
for d in glob.glob('/tmp/souter/out/r*-capped'):
    m = re.search(r'r(\d+)-[ABC]-(\d+)-capped$', d)
    log = open(d + '/log', errors='replace').read()
    if 'Latency statistics' not in log: continue
    t = [float(x) for x in re.findall(r'Start-up time: #* ?([0-9.]+) sec', log)]
    rm[(int(m[1]), int(m[2]))] = sum(t) / len(t)
for v in (2000, 512):
    d = [math.log(rm[(r, v)] / rm[(r, 75000)]) for r in range(1, 20) if (r, v) in rm and (r, 75000) in rm]
    n = len(d); md = sum(d) / n; se = stats.tstd(d) / math.sqrt(n); q = stats.t.ppf(0.975, n - 1)
    p = stats.ttest_1samp(d, 0).pvalue
    print(f'- capped, wbt {v} vs 75000, paired by round (n {n} rounds): ratio {math.exp(md):.3f}× (95% CI {math.exp(md-q*se):.3f}–{math.exp(md+q*se):.3f}), paired t-test on log ratios p {p:.2f}')
