"""GPT-2 124M in NumPy beside Hugging Face's transformers, run by hand (needs the gpt2 extra, torch
and transformers):

    python benchmarks/bench_gpt2.py [--rounds 3] [--new 64] [--threads 2] [--train_rounds 2] [--train_steps 3]

Writes a GPT-2 124M folder with random weights to a temporary folder (the weights do not change the
amount of work; the vocabulary's merges are made up), loads it both ways, and measures in one run:
  1. greedy decoding, tokens per second: --new tokens from a 16-token prompt, ours
     (transformer.generate, with its key/value cache, on the parameters laid out as generate.py and
     talk.py lay them out, prompting.laid_out_for_decoding, and on them packed as gpt2.load gives them)
     and transformers' (use_cache=True) alternated; ours also after its first token, the prompt's
     forward left out, which is what the limit of 4. bounds;
  2. how far our logits are from transformers' at this shape, on a 64-token prompt;
  3. the peak memory our generation forward takes for a 1,024-token prompt (tracemalloc), beside
     the weights themselves;
  4. the speed decoding cannot pass on this machine: each new token reads every weight matrix once,
     so tokens/s <= memory bandwidth / bytes of weights, the bandwidth timed on a large matrix-vector
     product in turns with the measurements of decoding (Bandwidth); and where a decoding step's time
     goes: the speed if a token took only its matrix-vector products (73 at 124M, in the model's
     order, on each layout), then that of a whole step of forward_cached;
  5. fine-tuning, seconds per training step at batch 1 and 4 of 128 tokens: ours as train.py's loop takes
     one (transformer.py's loss_and_grads, clip_grad_norm and Adam.step) and PyTorch's on transformers'
     GPT2LMHeadModel of the same folder (cross-entropy, backward, clip_grad_norm_, AdamW with weight decay on
     the matrices only, as ours; dropout off, as ours has none), taking turns, each in a fresh child process
     that reports its peak resident memory (getrusage's maxrss: weights, gradients, AdamW's moments and
     the libraries, all of it), after loading and after the steps.
Both use --threads threads: BLAS's through threadpoolctl, torch's with set_num_threads. torch and
transformers are imported only where they run, so our child process holds none of their memory.
"""

import argparse
import itertools
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engineering import gpt2, parallel, prompting  # noqa: E402
import tokenizer  # noqa: E402
import transformer  # noqa: E402

GPT2_124M = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12}


def write_gpt2_124m(folder, rng):
    """A GPT-2 124M folder as the hub holds it: random weights (std 0.02, GPT-2's initial scale),
    and a vocabulary of the 256 byte stand-ins, 50,000 made-up merges of two bytes, and <|endoftext|>."""
    V, T, C, L = (GPT2_124M[key] for key in ("vocab_size", "n_positions", "n_embd", "n_layer"))
    shapes = {"wte.weight": (V, C), "wpe.weight": (T, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for layer in range(L):
        shapes.update({f"h.{layer}.{name}": shape for name, shape in [
            ("ln_1.weight", (C,)), ("ln_1.bias", (C,)), ("attn.c_attn.weight", (C, 3 * C)),
            ("attn.c_attn.bias", (3 * C,)), ("attn.c_proj.weight", (C, C)), ("attn.c_proj.bias", (C,)),
            ("ln_2.weight", (C,)), ("ln_2.bias", (C,)), ("mlp.c_fc.weight", (C, 4 * C)),
            ("mlp.c_fc.bias", (4 * C,)), ("mlp.c_proj.weight", (4 * C, C)), ("mlp.c_proj.bias", (C,))]})
    tensors = {name: (1 + rng.normal(0, 0.02, shape) if name.endswith("ln_1.weight") or name.endswith("ln_2.weight")
                      or name == "ln_f.weight" else rng.normal(0, 0.02, shape)).astype(np.float32)
               for name, shape in shapes.items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    bytes_ = [char for _, char in tokenizer.byte_stand_ins()]
    merges = list(itertools.islice(itertools.product(bytes_, bytes_), V - 257))
    vocab = {token: i for i, token in enumerate(bytes_ + [a + b for a, b in merges] + [tokenizer.END_OF_TEXT])}
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", **GPT2_124M, "n_ctx": 1024,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "bos_token_id": 50256,
              "eos_token_id": 50256}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")


def ours_greedy(params, cfg, prompt, new):  # -> (ids, tokens/s, tokens/s after the first)
    start = time.perf_counter()
    tokens = transformer.generate(params, cfg, prompt, new, cfg.context_len, transformer.Sampling(0.0, 0, 1.0),
                               np.random.default_rng(0))
    ids = [next(tokens)]  # the prompt's forward, then the first token
    first = time.perf_counter()
    ids += list(tokens)
    end = time.perf_counter()
    return ids, new / (end - start), (new - 1) / (end - first)


def theirs_greedy(model, prompt, new):  # -> (ids, tokens/s)
    import torch
    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=new, min_new_tokens=new, do_sample=False,
                             use_cache=True, pad_token_id=0)
    return out[0, len(prompt):].tolist(), new / (time.perf_counter() - start)


def logits_gap(params, cfg, model, ids):  # the largest |ours - theirs| over a prompt's logits, and their scale
    import torch
    ours, _ = transformer.forward(params, np.array(ids), cfg)
    with torch.no_grad():
        theirs = model(torch.tensor([ids])).logits[0].numpy()
    return float(np.abs(ours - theirs).max()), float(np.abs(theirs).max())


def peak_bytes(run):
    """The most memory numpy held at once while run() ran, above what it held before (tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - before


class Bandwidth:
    """The bytes/s a matrix-vector product reads its matrix at: x @ W reads each of W's n * n float32s once and
    does little else, so its speed is memory's. sample() times it reps times and keeps the fastest; the
    benchmark takes a sample beside each measurement of decoding, so that a busy spell of this shared machine
    slows both, and limit() is the median of the samples."""

    def __init__(self, rng, n=8192):
        self.W, self.x = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        self.samples = []

    def sample(self, reps=5):
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            self.x @ self.W
            times.append(time.perf_counter() - start)
        self.samples.append(self.W.nbytes / min(times))

    def limit(self):
        return statistics.median(self.samples)


def products_rate(params, cfg, reps=15):
    """Tokens/s if a decoding step took only its matrix-vector products: each block's six and the head's,
    in the model's order, on params' own layout; the median of reps."""
    rng = np.random.default_rng(1)
    rows = {n: rng.standard_normal(n, dtype=np.float32) for n in (cfg.emb_dim, cfg.ff_dim)}
    names = [f"block{layer}.{key}" for layer in range(cfg.num_layers) for key in ("Wq", "Wk", "Wv", "Wo", "W1", "W2")]
    matrices = [params[name] for name in names + ["W_out"]]
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for W in matrices:
            rows[W.shape[0]] @ W
        times.append(time.perf_counter() - start)
    return 1 / statistics.median(times)


def step_rate(params, cfg, past, reps=15):  # tokens/s of one forward_cached step after the positions of past
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        transformer.forward_cached(params, [0], cfg, past)
        times.append(time.perf_counter() - start)
    return 1 / statistics.median(times)


def weight_bytes_per_token(params):
    """Bytes of weights one decoding step reads: every matrix and vector, but only one row of each table."""
    return sum(p.nbytes for name, p in params.items() if name not in ("tok_emb", "pos_emb")) + \
        2 * params["tok_emb"][0].nbytes


# --- fine-tuning: one training step, in a child process of its own ----------------------------------

def peak_rss():  # bytes: the most resident memory this process has held (Linux gives ru_maxrss in KiB)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def training_batch(vocab_size, batch, seq_len):  # -> (ids, targets), each (B, T): the same for both sides
    tokens = np.random.default_rng(1).integers(0, vocab_size, (batch, seq_len + 1))
    return tokens[:, :-1], tokens[:, 1:]


def ours_training(folder, batch, seq_len, steps):
    """(first loss, seconds of each step after a warm-up one, peak RSS after loading, after the steps): the step
    of train.py's loop."""
    parallel.keep_freed_memory()  # as train.py's loop does (DataParallel)
    params, cfg, _ = gpt2.load(folder)
    opt = transformer.Adam(params, 0.9, 0.999, 1e-8, 0.01)
    ids, targets = training_batch(cfg.vocab_size, batch, seq_len)
    loaded, losses, seconds = peak_rss(), [], []
    for _ in range(steps + 1):
        start = time.perf_counter()
        loss, grads = transformer.loss_and_grads(params, ids, targets, cfg)
        transformer.clip_grad_norm(grads, 1.0)
        opt.step(params, grads, 1e-4)
        del grads  # as train.py's loop
        seconds.append(time.perf_counter() - start)
        losses.append(loss)
    return losses[0], seconds[1:], loaded, peak_rss()


def theirs_training(folder, batch, seq_len, steps):
    """The same for transformers' GPT2LMHeadModel and torch's AdamW, in float32, dropout off."""
    import torch
    import transformers
    model = transformers.GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float32, resid_pdrop=0.0,
                                                         embd_pdrop=0.0, attn_pdrop=0.0).train()
    matrices = [p for p in model.parameters() if p.dim() == 2]
    others = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.01}, {"params": others, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    ids, targets = (torch.tensor(a) for a in training_batch(model.config.vocab_size, batch, seq_len))
    loaded, losses, seconds = peak_rss(), [], []
    for _ in range(steps + 1):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seconds.append(time.perf_counter() - start)
        losses.append(loss.item())
    return losses[0], seconds[1:], loaded, peak_rss()


def training_child(who, folder, batch, seq_len, steps, threads):
    """Run in the child: one side's steps, printed as one line of JSON."""
    if who == "ours":
        with threadpool_limits(threads):
            loss, seconds, loaded, peak = ours_training(folder, batch, seq_len, steps)
    else:
        import torch
        torch.set_num_threads(threads)
        loss, seconds, loaded, peak = theirs_training(folder, batch, seq_len, steps)
    print(json.dumps({"loss": loss, "seconds": seconds, "loaded": loaded, "peak": peak}))


def training_in_child(who, folder, batch, seq_len, steps, threads):  # -> the child's dict (training_child)
    command = [sys.executable, __file__, "--train_child", who, folder, "--batch", str(batch), "--seq_len",
               str(seq_len), "--train_steps", str(steps), "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def training_table(folder, args):
    """{(who, batch): [each round's child dict]}, ours and transformers' taking turns in each round."""
    results = {}
    for _, batch, who in itertools.product(range(args.train_rounds), (1, 4), ("ours", "transformers")):
        results.setdefault((who, batch), []).append(
            training_in_child(who, folder, batch, args.seq_len, args.train_steps, args.threads))
    return results


def print_training(results, args):
    print(f"fine-tuning, one training step at seq_len {args.seq_len}: median seconds of {args.train_steps} steps "
          f"after a warm-up one, in each of {args.train_rounds} fresh child processes; peak RSS (maxrss)")
    for (who, batch), rounds in results.items():
        seconds = [statistics.median(r["seconds"]) for r in rounds]
        tokens = batch * args.seq_len
        step = statistics.median(seconds)
        peak, loaded = max(r["peak"] for r in rounds), max(r["loaded"] for r in rounds)
        print(f"  {who:<14}batch {batch}: {step:6.2f} s/step ({tokens / step:5.0f} tokens/s), rounds "
              f"{', '.join(f'{s:.2f}' for s in seconds)}; peak RSS {peak / 2**30:.2f} GiB ({loaded / 2**30:.2f} GiB "
              f"once loaded); first loss {rounds[0]['loss']:.4f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--new", type=int, default=64, help="new tokens per round")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--train_rounds", type=int, default=2, help="child processes per side and batch size")
    p.add_argument("--train_steps", type=int, default=3, help="timed training steps per child")
    p.add_argument("--seq_len", type=int, default=128, help="tokens per row of a training batch")
    p.add_argument("--batch", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--train_child", nargs=2, metavar=("WHO", "FOLDER"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.train_child:
        training_child(*args.train_child, args.batch, args.seq_len, args.train_steps, args.threads)
        return
    import torch
    import transformers
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder, threadpool_limits(args.threads):
        write_gpt2_124m(Path(folder), rng)
        started = time.perf_counter()
        params, cfg, tokenizer = gpt2.load(folder)
        load_s = time.perf_counter() - started
        model = transformers.GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float32).eval()
        prompt = [int(i) for i in rng.integers(0, cfg.vocab_size, 16)]
        laid_out = prompting.laid_out_for_decoding(params)  # as generate.py and talk.py have them
        ours_greedy(laid_out, cfg, prompt, 4)  # warm-up, each
        ours_greedy(params, cfg, prompt, 4)
        theirs_greedy(model, prompt, 4)
        ways = {"ours": laid_out, "ours, packed": params}
        rates, after_first, same = {who: [] for who in [*ways, "transformers"]}, {way: [] for way in ways}, True
        memory = Bandwidth(rng)
        for _ in range(args.rounds):
            memory.sample()
            ids = {}
            for way, weights in ways.items():
                ids[way], rate, rate_after = ours_greedy(weights, cfg, prompt, args.new)
                rates[way].append(rate)
                after_first[way].append(rate_after)
            theirs_ids, rate = theirs_greedy(model, prompt, args.new)
            rates["transformers"].append(rate)
            same = same and all(ours_ids == theirs_ids for ours_ids in ids.values())
        _, past = transformer.forward_cached(params, prompt + theirs_ids[:args.new // 2], cfg)  # mid-way through a round
        per_step, products = {way: [] for way in ways}, {way: [] for way in ways}
        for _ in range(3):  # taking turns, so that a busy moment slows each
            memory.sample()
            for way, weights in ways.items():
                per_step[way].append(step_rate(weights, cfg, past))
                products[way].append(products_rate(weights, cfg))
        gap, scale = logits_gap(params, cfg, model, [int(i) for i in rng.integers(0, cfg.vocab_size, 64)])
        long_prompt = rng.integers(0, cfg.vocab_size, cfg.context_len)
        peak = peak_bytes(lambda: transformer.forward_cached(params, long_prompt, cfg))
        per_second, per_token = memory.limit(), weight_bytes_per_token(params)
        n_params, weights = sum(p.size for p in params.values()), transformer.flat_buffer(params).nbytes
        training = training_table(folder, args)
    print(f"GPT-2 124M, random weights: {n_params:,} parameters of ours (the head's copy included), "
          f"float32; loaded by gpt2.load in {load_s:.1f} s; {args.threads} threads each")
    limit = per_second / per_token
    print(f"greedy decoding, {args.new} new tokens from 16, median of {args.rounds} rounds (tokens/s):")
    for who, each in rates.items():
        print(f"  {who:<14}{statistics.median(each):>8.1f}   rounds: {', '.join(f'{r:.1f}' for r in each)}" +
              (f"; after the first token {statistics.median(after_first[who]):.1f} "
               f"({statistics.median(after_first[who]) / limit:.0%} of the limit below)" if who in after_first else ""))
    print(f"  the same tokens each way: {same}")
    print(f"logits on a 64-token prompt: largest |ours - transformers| = {gap:.2e} (largest logit {scale:.2f})")
    print(f"peak memory of forward_cached on a {cfg.context_len}-token prompt: {peak / 2**20:.0f} MiB above the "
          f"weights ({weights / 2**20:.0f} MiB)")
    print(f"bandwidth limit: {per_token / 2**20:.0f} MiB of weights per token at {per_second / 1e9:.1f} GB/s "
          f"-> at most {limit:.1f} tokens/s (the median of {len(memory.samples)} samples taken in turns with the "
          f"rest: {', '.join(f'{b / 1e9:.1f}' for b in memory.samples)} GB/s)")
    print(f"where a step's time goes, at {len(prompt) + args.new // 2} positions (tokens/s, median of 3 turns "
          f"of 15):")
    for way in ways:
        print(f"  {way:<14}the {6 * cfg.num_layers + 1} matrix-vector products alone {statistics.median(products[way]):5.1f} "
              f"({statistics.median(products[way]) / limit:.0%} of the limit); the whole step "
              f"{statistics.median(per_step[way]):5.1f} ({statistics.median(per_step[way]) / limit:.0%})")
    print_training(training, args)


if __name__ == "__main__":
    main()
