#!/usr/bin/env python3
"""The reference of bench/bench_serving.cpp: a plain Python discrete-event loop of the same
scheduler as serving/simulate.cpp (vLLM v1: the running sequences first, a decode or their prompt's
next chunk, preempting the latest admitted when KV blocks run out; then, in an iteration that
preempted none, waiting requests first come first served within the token budget, max_num_seqs and
the free blocks; chunked prefill; recompute preemption; no prefix caching), with the same
per-iteration cost as the benchmark gives rsim:

    t = BASE + PER_TOKEN * (tokens of the batch) + PER_KV * (sum over its sequences of context + tokens)

It reads the requests (arrival_s,prompt_tokens,output_tokens per line, after a header) and prints
one line: iterations, the mean TTFT and the mean E2E (for the benchmark to check that both did the
same work) and the seconds of CPU its loop took.

usage: bench/serving_ref.py REQUESTS.csv BASE PER_TOKEN PER_KV MAX_SEQS MAX_TOKENS BLOCK_SIZE KV_BLOCKS
"""
import sys
import time
from collections import deque


def simulate(reqs, base, per_token, per_kv, max_seqs, max_tokens, block, kv_blocks):
    n = len(reqs)
    computed = [0] * n
    generated = [0] * n
    blocks = [0] * n
    first = [0.0] * n
    finish = [0.0] * n
    free = kv_blocks
    waiting = deque()
    running = []
    nxt = 0
    now = 0.0
    iterations = 0
    while True:
        while nxt < n and reqs[nxt][0] <= now:
            waiting.append(nxt)
            nxt += 1
        budget = max_tokens
        preempted = False
        work = []  # (request, tokens, context)
        k = 0
        while k < len(running) and budget > 0:
            i = running[k]
            prompt = reqs[i][1]
            need = prompt + generated[i] - computed[i]
            take = min(need, budget)
            want = (computed[i] + take + block - 1) // block - blocks[i]
            self_out = False
            while want > free:
                victim = running.pop()
                free += blocks[victim]
                blocks[victim] = 0
                computed[victim] = 0
                waiting.appendleft(victim)
                preempted = True
                if victim == i:
                    self_out = True
                    break
            if self_out:
                break
            free -= want
            blocks[i] += want
            work.append((i, take, computed[i]))
            budget -= take
            k += 1
        if not preempted:
            while waiting and budget > 0 and len(running) < max_seqs:
                i = waiting[0]
                need = reqs[i][1] + generated[i]
                take = min(need, budget)
                want = (take + block - 1) // block
                if want > free:
                    break
                free -= want
                blocks[i] = want
                computed[i] = 0
                work.append((i, take, 0))
                budget -= take
                waiting.popleft()
                running.append(i)
        if not work:
            if nxt < n:
                now = max(now, reqs[nxt][0])
                continue
            break
        tokens = 0
        kv = 0
        for _, take, ctx in work:
            tokens += take
            kv += ctx + take
        now += base + per_token * tokens + per_kv * kv
        iterations += 1
        done = []
        for i, take, _ in work:
            computed[i] += take
            if computed[i] < reqs[i][1] + generated[i]:
                continue
            generated[i] += 1
            if generated[i] == 1:
                first[i] = now
            if generated[i] >= reqs[i][2]:
                done.append(i)
        for i in done:
            finish[i] = now
            free += blocks[i]
            blocks[i] = 0
            running.remove(i)
    ttft = sum(first[i] - reqs[i][0] for i in range(n)) / n
    e2e = sum(finish[i] - reqs[i][0] for i in range(n)) / n
    return iterations, ttft, e2e


def main():
    if len(sys.argv) != 9:
        sys.exit(__doc__)
    reqs = []
    with open(sys.argv[1]) as f:
        next(f)
        for line in f:
            a, p, o = line.split(",")
            reqs.append((float(a), int(p), int(o)))
    base, per_token, per_kv = (float(x) for x in sys.argv[2:5])
    max_seqs, max_tokens, block, kv_blocks = (int(x) for x in sys.argv[5:9])
    t0 = time.process_time()
    it, ttft, e2e = simulate(reqs, base, per_token, per_kv, max_seqs, max_tokens, block, kv_blocks)
    print(f"{it} {ttft!r} {e2e!r} {time.process_time() - t0!r}")


if __name__ == "__main__":
    main()
