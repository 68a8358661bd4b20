"""Fixtures of the model adapter tests: a loopback OpenAI-compatible server, a tiny local causal LM
built and overfit offline, and a guard that fails any connection leaving the machine."""
from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai_server import FakeOpenAIServer  # noqa: E402


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # unix sockets and the like
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any attempt to reach a non-loopback address fails, and fails the test even if a library swallowed it."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def check(address: Any) -> None:
        if not _is_local(address):
            attempts.append(address)
            raise AssertionError(f"test tried to reach the network: {address!r}")

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        check(address)
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> Any:
        check(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    yield
    assert not attempts, f"network access attempted: {attempts}"


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture()
def server(fake_server: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_server.reset()
    return fake_server


# --- a tiny local chat model --------------------------------------------------------------------

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

#: (user message, the reply the tiny model learns to give to it)
TINY_SCRIPTS = [
    ("Add two and three.", "Thought: add them.\n```python\nresult = 2 + 3\nprint(result)\n```\nObservation: 5 done"),
    ("Say hello.", "Thought: greet the user.\n```python\nfinal_answer('hello there')\n```"),
]


def _build_tiny_model(folder: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    specials = ["<pad>", "<|im_start|>", "<|im_end|>"]
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    corpus = [f"system user assistant {u} {r}" for u, r in TINY_SCRIPTS] * 20
    raw.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", eos_token="<|im_end|>",
                                        bos_token="<|im_start|>")
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    samples = []
    for user, reply in TINY_SCRIPTS:
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": user}], add_generation_prompt=True,
                                               tokenize=False)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        target_ids = tokenizer(reply, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        ids = torch.tensor([prompt_ids + target_ids])
        labels = torch.tensor([[-100] * len(prompt_ids) + target_ids])
        samples.append((ids, labels))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(120):
        for ids, labels in samples:
            loss = model(input_ids=ids, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    model.eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-llama")
    _build_tiny_model(folder)
    return folder
