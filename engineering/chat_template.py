"""A chat template: the Jinja text in a tokenizer_config.json that writes a conversation as the model was tuned
to read it, rendered as transformers' apply_chat_template(messages, tokenize=False) renders it.

    chat = ChatTemplate(source, {"eos_token": "<|im_end|>"}, ["<|im_start|>", "<|im_end|>"])
    chat.render([{"role": "user", "content": "Hi"}])  # "<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n"
    chat.end_of_turn  # "<|im_end|>": where a reply ends

The environment is transformers': Jinja's immutable sandbox (a template from the hub is code a stranger wrote),
trim_blocks and lstrip_blocks (a {% %} line leaves no blank line behind), the loop controls {% break %} and
{% continue %}, {% generation %} blocks, raise_exception(message), strftime_now(format), and a tojson that
leaves non-ASCII characters as they are. A template sees the messages, add_generation_prompt, tools and
documents (None here), the tokenizer's named special tokens (bos_token, eos_token, ...) and any variable the
caller adds, such as Qwen3's enable_thinking.

Needs jinja2 3.1.6 or later (the gpt2 extra), as transformers does: older versions let a template out of its sandbox.
"""

import importlib
import json
from datetime import datetime

from engineering.errors import InputError


class Unreadable(Exception):
    """A chat template Jinja cannot compile; the message says where and why."""


PROBE = [{"role": "user", "content": "Who are you?"}, {"role": "assistant", "content": "numpy-gpt's probe reply"}]


def jinja():
    """The jinja2 module, 3.1.6 or later, or InputError saying how to install it."""
    try:
        jinja2 = importlib.import_module("jinja2")
    except ModuleNotFoundError:
        raise InputError('rendering a chat template needs the jinja2 package: pip install -e ".[gpt2]"') from None
    if tuple(int(part) for part in jinja2.__version__.split(".")[:3] if part.isdigit()) < (3, 1, 6):
        raise InputError(f"rendering a chat template needs jinja2 3.1.6 or later (this is {jinja2.__version__}, "
                         f"whose sandbox a template can leave): pip install -U jinja2")
    return jinja2


def environment():
    """The Jinja environment transformers renders chat templates in."""
    jinja()  # installed, and new enough
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        """{% generation %}...{% endgeneration %}: marks the assistant's text for training masks; renders its body."""
        tags = {"generation"}

        def parse(self, parser):
            next(parser.stream)
            return parser.parse_statements(("name:endgeneration",), drop_needle=True)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda format: datetime.now().strftime(format)
    return env


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    """transformers' tojson: json.dumps, non-ASCII kept, nothing HTML-escaped (Jinja's own escapes < > & ')."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    """What a template calls to refuse a conversation (roles that do not alternate, say)."""
    raise jinja().TemplateError(message)


class ChatTemplate:
    """A compiled chat template, the named special tokens it sees (variables), and end_of_turn: the added token
    a reply ends with (None where the template ends a turn with none)."""

    def __init__(self, source, variables, added_tokens):
        jinja2 = jinja()
        self.source, self.variables = source, dict(variables)
        try:
            self.template = environment().from_string(source)
        except jinja2.TemplateSyntaxError as bad:
            raise Unreadable(f"{bad.message}, at its line {bad.lineno}") from None
        self.end_of_turn = self.turn_end(added_tokens)

    def render(self, messages, add_generation_prompt=True, **variables):
        """The conversation as the model reads it: messages are {"role": ..., "content": ...}; with
        add_generation_prompt, the opening of the assistant's turn follows; variables reach the template
        (tools=[...], enable_thinking=False). InputError where the template refuses the conversation
        (raise_exception), with its message.

        Example (tests/tiny_tokenizers.py's CHATML, SmolLM2's kind): [{"role": "user", "content": "Hi"}] ->
        "<|im_start|>system\\nYou are a small assistant, written by hand.<|im_end|>\\n"
        "<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n"
        """
        jinja2 = jinja()
        # as transformers: a key whose value is None is left out, which templates read as a missing key
        messages = [{key: value for key, value in message.items() if value is not None} for message in messages]
        context = {"messages": messages, "tools": None, "documents": None,
                   "add_generation_prompt": add_generation_prompt, **self.variables, **variables}
        try:
            return self.template.render(context)
        except jinja2.TemplateError as refusal:
            raise InputError(f"the model's chat template refuses this conversation: {refusal}") from None

    def turn_end(self, added_tokens):
        """The added token that follows an assistant's reply in the rendered PROBE conversation (after any
        whitespace), or None: where the template cannot render it, or ends the turn with plain text."""
        try:
            text = self.render(PROBE, add_generation_prompt=False)
        except InputError:
            return None
        reply = PROBE[-1]["content"]
        after = text[text.rindex(reply) + len(reply):].lstrip() if reply in text else ""
        ends = [token for token in added_tokens if token and after.startswith(token)]
        return max(ends, key=len, default=None)
