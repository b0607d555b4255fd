"""chat_template.py: a tokenizer_config.json's chat template renders a conversation as transformers'
apply_chat_template(..., tokenize=False) renders it, and names the token a reply ends at.

The templates are written in tests/tiny_tokenizers.py after the kinds SmolLM2 (ChatML) and Qwen3 (ChatML with
<think>) ship; FEATURES below uses what else a template on the hub may: raise_exception, the loop controls,
tojson, namespace, {% generation %}, and lines of {% %} that trim_blocks and lstrip_blocks take away.
"""

import json
from datetime import datetime

import pytest

pytest.importorskip("regex", reason='the gpt2 extra is not installed: pip install -e ".[gpt2]"')
pytest.importorskip("jinja2", reason='the gpt2 extra is not installed: pip install -e ".[gpt2]"')
pytest.importorskip("tokenizers", reason="tokenizers is not installed: the tiny tokenizers are trained with it")

import tiny_tokenizers  # noqa: E402
from engineering import hf_tokenizer  # noqa: E402
from engineering.errors import InputError  # noqa: E402

FEATURES = """{{ bos_token }}
{% set ns = namespace(turns=0) %}
{% for message in messages %}
    {% if message['role'] == 'system' %}
        {% if not loop.first %}
            {{ raise_exception('a system message may only come first') }}
        {% endif %}
[SYS] {{ message['content'] }}
        {% continue %}
    {% endif %}
    {% if message['role'] == 'stop' %}
        {% break %}
    {% endif %}
    {% set ns.turns = ns.turns + 1 %}
[{{ message['role'] | upper }} {{ ns.turns }}{% if message.name is defined %} {{ message.name }}{% endif %}] {#
#}{% generation %}{{ message['content'] | trim }}{% endgeneration %}<|im_end|>

{% endfor %}
{% if meta is defined %}
{{ meta | tojson(sort_keys=true) }}
{% endif %}
{% if add_generation_prompt %}
[ASSISTANT {{ ns.turns + 1 }}]
{% endif %}"""

CONVERSATIONS = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 2?"},
     {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3 + 3?"}],
    [{"role": "user", "content": "naïve 🤖 <b>\n\n"}, {"role": "assistant", "content": "  spaced  "},
     {"role": "user", "content": "again", "name": None}, {"role": "user", "content": "named", "name": "Ana"}],
]
THINKING = [  # conversations whose assistant turns hold reasoning, and tool calls
    [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "<think>\nfirst\n</think>\n\nA1"},
     {"role": "user", "content": "Q2"}],
    [{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1", "reasoning_content": "kept?"},
     {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "<think>\nlast\n</think>\n\nA2"}],
    [{"role": "system", "content": "Tools."}, {"role": "user", "content": "Weather?"},
     {"role": "assistant", "content": "calling"}, {"role": "tool", "content": '{"sunny": true}'}],
]
TOOLS = [{"type": "function", "function": {"name": "weather", "description": "Wetter für eine Stadt",
                                           "parameters": {"type": "object", "properties": {}}}}]


def auto_tokenizer(folder):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed: it renders the "
                                                              "templates compared with")
    return transformers.AutoTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    made = tmp_path_factory.mktemp("chat")
    return {"smollm2": tiny_tokenizers.write_folder(made / "smollm2", "smollm2"),
            "qwen3": tiny_tokenizers.write_folder(made / "qwen3", "qwen3"),
            "gpt2": tiny_tokenizers.write_folder(made / "gpt2", "gpt2"),
            "features": tiny_tokenizers.write_folder(made / "features", "smollm2", chat_template=FEATURES)}


@pytest.mark.parametrize("kind", ["smollm2", "features"])
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_a_conversation_renders_as_transformers_renders_it(folders, kind, add_generation_prompt):
    ours, theirs = hf_tokenizer.load(folders[kind]), auto_tokenizer(folders[kind])
    for messages in CONVERSATIONS:
        expected = theirs.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
        assert ours.chat_prompt(messages, add_generation_prompt=add_generation_prompt) == expected


@pytest.mark.parametrize("enable_thinking", [None, True, False])
def test_qwen3s_thinking_renders_as_transformers_renders_it(folders, enable_thinking):
    ours, theirs = hf_tokenizer.load(folders["qwen3"]), auto_tokenizer(folders["qwen3"])
    given = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
    for messages in CONVERSATIONS + THINKING:
        for add_generation_prompt in (True, False):
            expected = theirs.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=add_generation_prompt, **given)
            assert ours.chat_prompt(messages, add_generation_prompt=add_generation_prompt, **given) == expected
    thoughtless = ours.chat_prompt(CONVERSATIONS[0], enable_thinking=False)
    assert thoughtless.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_tools_and_variables_reach_the_template_as_in_transformers(folders):
    ours, theirs = hf_tokenizer.load(folders["qwen3"]), auto_tokenizer(folders["qwen3"])
    expected = theirs.apply_chat_template(THINKING[2], tools=TOOLS, tokenize=False, add_generation_prompt=True)
    assert ours.chat_prompt(THINKING[2], tools=TOOLS) == expected
    assert '"description": "Wetter für eine Stadt"' in expected  # tojson keeps non-ASCII
    ours, theirs = hf_tokenizer.load(folders["features"]), auto_tokenizer(folders["features"])
    meta = {"b": "é<&>", "a": [1, 2]}
    assert ours.chat_prompt(CONVERSATIONS[0], meta=meta) == theirs.apply_chat_template(
        CONVERSATIONS[0], tokenize=False, add_generation_prompt=True, meta=meta)
    assert '{"a": [1, 2], "b": "é<&>"}' in ours.chat_prompt(CONVERSATIONS[0], meta=meta)


def test_the_loop_controls_and_trimmed_lines_by_hand(folders):
    ours = hf_tokenizer.load(folders["features"])
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": " x "},
                {"role": "stop", "content": ""}, {"role": "user", "content": "never"}]
    # the bos_token's line ends after an expression, which trim_blocks keeps; every {% %} line goes
    assert ours.chat_prompt(messages) == "<|im_start|>\n[SYS] S\n[USER 1] x<|im_end|>\n\n[ASSISTANT 2]\n"


def test_a_template_that_refuses_a_conversation_says_why_in_one_line(folders):
    messages = [{"role": "user", "content": "Hi"}, {"role": "system", "content": "late"}]
    with pytest.raises(InputError, match="^the model's chat template refuses this conversation: a system message "
                                         "may only come first$"):
        hf_tokenizer.load(folders["features"]).chat_prompt(messages)
    jinja2 = pytest.importorskip("jinja2")
    with pytest.raises(jinja2.TemplateError, match="a system message may only come first"):
        auto_tokenizer(folders["features"]).apply_chat_template(messages, tokenize=False)


def test_strftime_now_gives_todays_date(tmp_path):
    folder = tiny_tokenizers.write_folder(tmp_path, "smollm2", chat_template="{{ strftime_now('%Y-%m-%d') }}")
    before = datetime.now().strftime("%Y-%m-%d")
    rendered = hf_tokenizer.load(folder).chat_prompt(CONVERSATIONS[0])
    assert rendered in {before, datetime.now().strftime("%Y-%m-%d")}


def test_gpt2_has_no_template_and_says_so(folders):
    ours = hf_tokenizer.load(folders["gpt2"])
    assert ours.chat is None
    with pytest.raises(InputError, match="holds no chat_template: it is a base model"):
        ours.chat_prompt(CONVERSATIONS[0])
    with pytest.raises(ValueError, match="chat_template is not set"):
        auto_tokenizer(folders["gpt2"]).apply_chat_template(CONVERSATIONS[0], tokenize=False)


def test_a_reply_ends_at_the_end_of_turn_token_or_eos(folders, tmp_path):
    smollm2, qwen3 = hf_tokenizer.load(folders["smollm2"]), hf_tokenizer.load(folders["qwen3"])
    assert smollm2.chat.end_of_turn == "<|im_end|>" and qwen3.chat.end_of_turn == "<|im_end|>"
    assert smollm2.stop_ids() == [smollm2.token_id("<|im_end|>")]
    gpt2 = hf_tokenizer.load(folders["gpt2"])
    assert gpt2.stop_ids() == [gpt2.token_id("<|endoftext|>")]  # eos alone
    llama_style = "{% for m in messages %}{{ m['content'] }}<|eot_id|>{% endfor %}"
    llama3 = hf_tokenizer.load(tiny_tokenizers.write_folder(tmp_path / "llama3", "llama3", chat_template=llama_style))
    assert llama3.stop_ids() == [llama3.token_id("<|eot_id|>")]  # the end of turn is eos here too
    plain = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n\n{% endfor %}"
    plain_folder = tiny_tokenizers.write_folder(tmp_path / "plain", "gpt2", chat_template=plain, eos_token=None)
    assert hf_tokenizer.load(plain_folder).chat.end_of_turn is None  # a turn ends in plain text


def test_the_rendered_text_encodes_to_apply_chat_templates_ids(folders):
    ours, theirs = hf_tokenizer.load(folders["qwen3"]), auto_tokenizer(folders["qwen3"])
    for messages in CONVERSATIONS + THINKING:
        expected = theirs.apply_chat_template(messages, add_generation_prompt=True)["input_ids"]
        assert ours.encode(ours.chat_prompt(messages), add_special_tokens=False) == expected


def test_the_default_of_a_list_of_templates_and_chat_template_jinja_are_read(tmp_path, folders):
    folder = tiny_tokenizers.write_folder(tmp_path / "listed", "smollm2", chat_template=[
        {"name": "tool_use", "template": "tools"}, {"name": "default", "template": tiny_tokenizers.CHATML}])
    assert hf_tokenizer.load(folder).settings["chat_template"] == tiny_tokenizers.CHATML
    (folder / "chat_template.jinja").write_text("{{ messages | length }} turns", encoding="utf-8")
    assert hf_tokenizer.load(folder).chat_prompt(CONVERSATIONS[1]) == "4 turns"
    assert auto_tokenizer(folder).apply_chat_template(CONVERSATIONS[1], tokenize=False) == "4 turns"


def test_a_template_jinja_cannot_read_is_one_line(tmp_path):
    folder = tiny_tokenizers.write_folder(tmp_path, "smollm2", chat_template="{% for m in messages %}{{ m }")
    with pytest.raises(InputError) as refusal:
        hf_tokenizer.load(folder)
    message = str(refusal.value)
    assert message.startswith(f"{folder / 'tokenizer.json'} has a chat_template (from tokenizer_config.json) that "
                              f"Jinja cannot read: ") and "\n" not in message


def test_the_template_and_its_tokens_survive_a_runs_tokenizer_file(folders, tmp_path):
    from engineering import tokenizer_files
    ours = hf_tokenizer.load(folders["qwen3"])
    path = tmp_path / "model.tok.json"
    path.write_bytes(tokenizer_files.to_bytes(ours))
    loaded = tokenizer_files.load(path)
    assert loaded.chat_prompt(THINKING[0]) == ours.chat_prompt(THINKING[0])
    assert loaded.stop_ids() == ours.stop_ids() and json.loads(path.read_text())["format"] == "numpy-gpt-hf-tokenizer"
