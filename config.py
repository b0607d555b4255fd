"""Every setting of the project, one plain assignment each, with a comment that says what it does.

train.py, generate.py and talk.py read these values. Any of them can be given on the command line as
`--name value` or `--name=value` (`python train.py --epochs 2`); each script's --help lists the ones it
reads, with the comment written here. A recipe (RECIPES, at the end) is a named set of values measured
for one job: `python train.py --recipe book --corpus_path my.txt`; a setting given beside it still wins.
The scripts check the values before any work and name the one that cannot work (engineering/settings.py).
"""

# --- the model (vocab_size is not here: it comes from the tokenizer) ---
context_len = 32  # rows of the position table: the longest sequence the model can read
emb_dim = 32  # width of every token vector (C in the equations)
num_heads = 2  # attention heads per block
num_layers = 2  # transformer blocks
ff_dim = 128  # hidden width of each block's MLP
ln_eps = 1e-5  # added to the variance in every layer norm, so no division by zero
# today's family, each default GPT-2's: python train.py --norm rmsnorm --positions rope --mlp swiglu --kv_heads 1
norm = "layernorm"  # every norm: "layernorm", or "rmsnorm" (each row only scaled, by 1 / its root mean square)
positions = "learned"  # "learned" (the position table), or "rope" (each head's queries and keys turned by position)
rope_theta = 10000.0  # with rope: pair i of a head turns by t * rope_theta^(-2i/head_dim) at position t
mlp = "gelu"  # each block's MLP: "gelu", or "swiglu", (silu(x W_gate) * (x W_up)) W_down
kv_heads = 0  # heads of keys and values, each shared by num_heads / kv_heads query heads; 0 = num_heads
qk_norm = False  # true: each head's queries and keys through an RMSNorm of their own, as Qwen3's
bias = True  # false: no bias in any linear layer and no shift in any norm
tied_head = False  # true: the token table is the head too (logits = x tok_emb^T), no W_out and no b_out
head_dim = 0  # the width of each head; 0 = emb_dim // num_heads
dtype = "float32"  # compute dtype of training: float32 (fast) or float64 (what the gradient checks use)

# --- the data ---
corpus_path = "data/corpus.csv"  # a CSV (rows are documents) or a .txt (one exact text); falls back to data/sample.csv when absent
corpus_column = "text"  # the CSV column that holds the text
max_rows = 2000  # keep only the first max_rows rows of a CSV; 0 = all of them
num_merges = 500  # BPE merges learned on top of the corpus's characters
val_fraction = 0.1  # share held out for validation: whole rows of a CSV, the end of a .txt
val_path = ""  # a held-out text of your own (a .txt or a CSV, as the corpus), scored at each validation; the corpus is then not split; "" = hold out val_fraction
seq_len = 16  # tokens in one training window, and the generation window
stride = 1  # tokens between the starts of two consecutive windows

# --- training ---
batch_size = 16  # windows per optimizer step
epochs = 20  # passes over the training windows (when max_steps is 0)
minutes = 0.0  # the best model this machine trains in this many minutes, command to exit (0.5 works): shape, merges, batch, steps chosen here (engineering/planner.py); 0 = off
max_steps = 0  # optimizer steps in the run, and the length of its schedule; 0 = epochs decide; at most 10,000,000
eval_interval = 250  # with max_steps: steps between validations (a run in epochs validates at each epoch's end)
patience = 3  # stop once this many validations in a row have not beaten the best one; 0 = never stop early
eval_tokens = 0  # held-out tokens scored at each validation, a fixed seeded choice of windows; 0 = all of them
seed = 42  # seeds the initial weights, the split, the order of the windows and the samples
lr_max = 1e-3  # learning rate at the end of warmup
lr_min = 1e-4  # learning rate at the last step, where the cosine ends
warmup_steps = 50  # steps of linear warmup from 0 to lr_max
beta1 = 0.9  # Adam's decay of the running mean of gradients
beta2 = 0.999  # Adam's decay of the running mean of squared gradients
adam_eps = 1e-8  # added to Adam's denominator
weight_decay = 0.01  # decoupled weight decay (AdamW), applied to every matrix and to nothing else
grad_clip = 1.0  # gradients are scaled down to this global L2 norm when larger
checkpoint = "checkpoints"  # where models live: each run in its own folder in runs/; talk.py reads the latest finished
init_from = ""  # a Hugging Face GPT-2 folder to fine-tune (config.json, model.safetensors, vocab.json, merges.txt)
processes = 0  # who shares each batch: 0 = this process's threads, one per core where a slice holds enough work (not the default model's); 1 = this thread alone; N = N processes, faster, but a breakpoint() in another's slice does not stop; at most 2 per core

# --- generation ---
max_new_tokens = 50  # tokens generated for each prompt
temperature = 0.8  # divides the logits before sampling; 0 means always take the most likely token
top_k = 0  # keep only the k most likely tokens; 0 turns this filter off
top_p = 0.9  # keep the smallest set of most likely tokens whose probability reaches top_p

# --- recipes ---
recipe = ""  # a named set of overrides from RECIPES, applied before the settings given with it; "" = none

# Each value chosen by measurement on a 2-core machine, for the best bits per character on held-out
# text per second of training; benchmarks/bench_text.py measures the recipe, the README has its figures.
RECIPES = {
    "book": {
        # bits/char on held-out Shakespeare, at about the same wall time: one block 2.15-2.21, two 2.41,
        # four 2.53 (width 96) or 2.69 (width 128); a second seed moved a result by 0.06
        "num_layers": 1, "emb_dim": 128, "num_heads": 4, "ff_dim": 512, "context_len": 64, "seq_len": 64,
        "num_merges": 500,  # 2.15 against 2.21 at 250 merges and 2.28 at 1000 (slower to learn, too)
        "batch_size": 12, "lr_max": 3e-3, "lr_min": 3e-4,  # lr 2e-3: 2.23, 5e-3: worse
        "max_steps": 2200,  # 2.19 in 74 s of wall time (two runs); 2,500 steps gave 2.15 but took 81-87 s
        "warmup_steps": 100, "beta2": 0.99, "weight_decay": 0.1,  # nanoGPT's; 50, 0.999, 0.01 did no better
        "eval_interval": 500, "eval_tokens": 8192,  # five quick validations on a fixed choice of windows
        "processes": 2,  # a step 1.18 times as fast as 2 threads' (0), with the same numbers (docs/engineering/processes.md)
    },
    "gpt2": {
        # fine-tuning GPT-2 124M (--init_from) on a text of your own, on a laptop's CPU
        # no context_len, emb_dim, ...: the model's shape is the GPT-2's own (engineering/gpt2.py's adopt_shape)
        "seq_len": 128, "batch_size": 4,  # 3.6 s a step on 2 cores, 3.4 GiB at its peak (benchmarks/bench_gpt2.py)
        "max_steps": 30, "eval_interval": 10, "eval_tokens": 2048, "warmup_steps": 5,  # about 3 minutes in all
        "lr_max": 1e-4, "lr_min": 1e-5,  # a tenth of the book recipe's: the weights are trained already
        "beta2": 0.99, "weight_decay": 0.0,  # no decay pulling the pretrained weights towards 0
        "processes": 1,  # one thread: a thread of its own would hold a second gradient of 650 MB
    },
}
RECIPE_USES = {  # what each recipe is for, a line each in --help
    "book": "one plain-text book or play of about 1 MB: python train.py --recipe book --corpus_path my.txt",
    "gpt2": "fine-tune a GPT-2 folder on a text: python train.py --recipe gpt2 --init_from gpt2 --corpus_path my.txt",
}
