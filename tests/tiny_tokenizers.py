"""Tiny tokenizer.json files of each kind the project reads, built here, and chat templates written here.

Not a test module: tests/test_hf_tokenizer.py and tests/test_chat_template.py read them, and a test of a whole
Hugging Face folder can write one beside its weights (write_folder). Nothing is downloaded. trained(kind) trains
a byte-level BPE with the `tokenizers` library (which the caller checks is installed) on TRAINING_TEXT, with the
pre-tokenizer and normalizer each family's own tokenizer.json holds (written from their structure, not copied):

    gpt2     ByteLevel with GPT-2's regex; <|endoftext|>
    smollm2  Digits (each digit alone), then ByteLevel with GPT-2's regex; <|endoftext|>, <|im_start|>, <|im_end|>
             first in the vocabulary; and, like SmolLM2's, a vocabulary without every byte (trained without
             ByteLevel's full alphabet), so some characters cannot be encoded
    qwen3    NFC, then a Split by Qwen's regex (each digit alone), then ByteLevel without a regex; the chat tokens
             added after the vocabulary, and <think> and </think> as added tokens that are not special
    llama3   a Split by Llama-3's regex (digits in threes), ignore_merges, and a TemplateProcessing that puts
             <|begin_of_text|> before every text

handwritten() is a tokenizer.json small enough to check by hand, and needs nothing installed.
"""

import json

from tokenizer import byte_stand_ins

TRAINING_TEXT = """Hello world! It's the cat's hat; we'll see, they've said, I'm here and you'd know. DON'T SHOUT.
Numbers: 1234567 and 3.14159, 2024-06-01, 10,000.   Runs   of    spaces   and\ttabs.
naïve café résumé Ærø, Ελληνικά, русский, 日本語のテキスト, 한국어, عربي, हिन्दी.
Emoji: 🤖🤖 🎉 👍🏽 🇫🇷 and ❤️ in a line.
<|im_start|>user
What is 12 + 30?<|im_end|>
<|im_start|>assistant
<think>
Adding.
</think>

It is 42.<|im_end|>

Blank lines above, and a last line without a newline"""

# Qwen's pre-split: contractions in any case, a letter run with one mark before it, each digit alone,
# punctuation with the line ends after it, line ends with the spaces before them, runs of spaces
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_SPLIT = QWEN_SPLIT.replace(r"|\p{N}|", r"|\p{N}{1,3}|")  # Llama-3's: digits in runs of up to three
CHAT_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
KINDS = ("gpt2", "smollm2", "qwen3", "llama3")

# SmolLM2's kind of template: ChatML, with a system message of its own where the conversation has none
CHATML = ("{% for message in messages %}"
          "{% if loop.first and messages[0]['role'] != 'system' %}"
          "{{ '<|im_start|>system\\nYou are a small assistant, written by hand.<|im_end|>\\n' }}"
          "{% endif %}"
          "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
          "{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

# Qwen3's kind of template: ChatML; the reasoning of assistant turns after the last question kept between
# <think> and </think>, earlier turns' dropped; enable_thinking=False writes an empty thought for the model
THINKING_CHATML = """{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- 'Tools you may call, one JSON object a line:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}
{{- '\\n</tools><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- set ns = namespace(last_question=messages|length - 1, seeking=true) %}
{%- for message in messages[::-1] %}
    {%- set at = messages|length - 1 - loop.index0 %}
    {%- if ns.seeking and message.role == 'user' and message.content is string
          and not message.content.startswith('<tool_response>') %}
        {%- set ns.seeking = false %}
        {%- set ns.last_question = at %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- set content = message.content if message.content is string else '' %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' }}
    {%- elif message.role == 'assistant' %}
        {%- set thought = message.reasoning_content if message.reasoning_content is string else '' %}
        {%- if not thought and '</think>' in content %}
            {%- set thought = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
        {%- endif %}
{{- '<|im_start|>assistant\\n' }}
        {%- if loop.index0 > ns.last_question and (loop.last or thought) %}
{{- '<think>\\n' + thought.strip('\\n') + '\\n</think>\\n\\n' }}
        {%- endif %}
{{- content.lstrip('\\n') + '<|im_end|>\\n' }}
    {%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + content + '\\n</tool_response><|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
{{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}"""

SETTINGS = {  # tokenizer_config.json's special tokens of each kind, and its chat template (None: a base model)
    "gpt2": ({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}, None),
    "smollm2": ({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>",
                 "pad_token": "<|im_end|>"}, CHATML),
    "qwen3": ({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, THINKING_CHATML),
    "llama3": ({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}, None),
}


def trained(kind, vocab_size=500):
    """A tokenizers.Tokenizer of kind (KINDS), trained on TRAINING_TEXT."""
    from tokenizers import AddedToken, Regex, Tokenizer, processors
    from tokenizers import pre_tokenizers as pre
    from tokenizers.normalizers import NFC
    if kind == "gpt2":
        return train(pre.ByteLevel(add_prefix_space=False, use_regex=True), ["<|endoftext|>"], vocab_size)
    if kind == "smollm2":
        steps = [pre.Digits(individual_digits=True), pre.ByteLevel(add_prefix_space=False, use_regex=True)]
        return train(pre.Sequence(steps), CHAT_TOKENS, vocab_size, every_byte=False)
    if kind == "qwen3":
        steps = [pre.Split(Regex(QWEN_SPLIT), "isolated"), pre.ByteLevel(add_prefix_space=False, use_regex=False)]
        tokenizer = train(pre.Sequence(steps), [], vocab_size, normalizer=NFC())
        tokenizer.add_special_tokens(CHAT_TOKENS)
        tokenizer.add_tokens([AddedToken(tag, normalized=False, special=False) for tag in ("<think>", "</think>")])
        return tokenizer
    assert kind == "llama3", f"no tokenizer of kind {kind}"
    steps = [pre.Split(Regex(LLAMA3_SPLIT), "isolated"), pre.ByteLevel(add_prefix_space=False, use_regex=False)]
    tokenizer = train(pre.Sequence(steps), [], vocab_size)
    tokenizer.add_special_tokens(["<|begin_of_text|>", "<|eot_id|>"])
    bos = ("<|begin_of_text|>", tokenizer.token_to_id("<|begin_of_text|>"))
    tokenizer.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False),
                                                    processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                                                  special_tokens=[bos])])
    file = json.loads(tokenizer.to_str())
    file["model"]["ignore_merges"] = True
    return Tokenizer.from_str(json.dumps(file))


def train(pre_tokenizer, special_tokens, vocab_size, normalizer=None, every_byte=True):
    """A byte-level BPE trained on TRAINING_TEXT, with ByteLevel's decoder and post-processor."""
    from tokenizers import Tokenizer, decoders, models, processors, trainers
    from tokenizers.pre_tokenizers import ByteLevel
    tokenizer = Tokenizer(models.BPE())
    if normalizer is not None:
        tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    alphabet = {"initial_alphabet": ByteLevel.alphabet()} if every_byte else {}
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens, show_progress=False, **alphabet)
    tokenizer.train_from_iterator([TRAINING_TEXT] * 3, trainer=trainer)
    return tokenizer


def write_folder(folder, kind, chat_template="default", **config):
    """folder with kind's tokenizer.json and a tokenizer_config.json: its special tokens, the chat template
    (SETTINGS's unless given; None for none) and config's entries. Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    trained(kind).save(str(folder / "tokenizer.json"))
    special_tokens, template = SETTINGS[kind]
    template = template if chat_template == "default" else chat_template
    written = {"tokenizer_class": "PreTrainedTokenizerFast", **special_tokens, **config}
    if template is not None:
        written["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(written, ensure_ascii=False), encoding="utf-8")
    return folder


def handwritten():
    """A byte-level tokenizer.json to check by hand: the 256 byte stand-ins (ids 0..255, " " is "Ġ" = 220,
    "h" = 71, "i" = 72), the merges (h, i) -> "hi" = 256 and (Ġ, hi) -> "Ġhi" = 257, and <|im_end|> = 258."""
    vocab = {char: i for i, (_, char) in enumerate(byte_stand_ins())}
    vocab.update({"hi": 256, "Ġhi": 257})
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": 258, "content": "<|im_end|>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True}],
            "normalizer": None, "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": vocab, "merges": [["h", "i"], ["Ġ", "hi"]]}}
