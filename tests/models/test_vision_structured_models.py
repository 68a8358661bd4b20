"""Image parts and structured output through the adapters: litellm against the loopback OpenAI server, and guided
decoding on the tiny local model."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from agents import CodeAgent
from agents.errors import ImageRefusedError, ModelError
from agents.loop.structured_code import CODE_STEP_FORMAT, CODE_STEP_SCHEMA
from agents.models import load_model
from agents.models.images import to_image
from agents.models.retry import RetryPolicy
from agents.models.transformers_structured import string_end, valid_body


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (3, 3), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def remote(server, name: str):
    return load_model(name, api_base=server.url, api_key="sk-test", retry=RetryPolicy(max_retries=0))


def test_litellm_sends_image_parts(server):
    model = remote(server, "openai/gpt-4.1-mini")
    assert model.supports_images  # litellm's bundled map (supports_vision), offline
    image = to_image(png())
    messages = [{"role": "user", "content": [{"type": "text", "text": "What colour?"}, image.part()]}]
    server.script = [{"type": "reply", "content": "Red."}]
    assert model.generate(messages).content == "Red."
    sent = server.requests[0]["messages"][0]["content"]
    assert sent[0] == {"type": "text", "text": "What colour?"}
    assert sent[1]["type"] == "image_url" and sent[1]["image_url"]["url"] == image.data_url()


def test_a_text_only_litellm_model_refuses_a_tasks_images(server, tmp_path):
    model = remote(server, "openai/some-text-model")
    assert not model.supports_images
    with CodeAgent(model=model, workdir=tmp_path, verbosity=0) as agent:
        with pytest.raises(ImageRefusedError, match="does not read images"):
            agent.run("Describe it.", images=[png()])
    assert server.requests == []
    assert remote(server, "openai/some-text-model").supports_images is False
    assert load_model("openai/some-text-model", api_base=server.url, api_key="k", images=True).supports_images


def test_structured_steps_send_the_response_format(server, tmp_path):
    model = remote(server, "openai/gpt-4.1-mini")
    server.script = [{"type": "reply", "content": json.dumps({"thought": "Multiply.", "code": "final_answer(6 * 7)"})}]
    with CodeAgent(model=model, workdir=tmp_path, verbosity=0, use_structured_outputs_internally=True) as agent:
        assert agent.run("Six times seven?") == 42
    body = server.requests[0]
    print(body.get("response_format"))
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == CODE_STEP_SCHEMA
    assert "stop" not in body


@pytest.mark.slow
def test_guided_decoding_on_a_tiny_local_model_always_gives_the_object(tiny_model_dir: Path):
    model = load_model(f"transformers:{tiny_model_dir}")
    assert model.supports_structured_output
    ask = [{"role": "user", "content": "Add two and three."}]
    reply = model.generate(ask, response_format=CODE_STEP_FORMAT, max_new_tokens=30)
    value = json.loads(reply.content)  # whatever the model writes, the reply is the object
    assert list(value) == ["thought", "code"] and all(isinstance(v, str) for v in value.values())
    assert reply.content.startswith('{"thought": "') and 0 < reply.token_usage.output_tokens <= 30
    deltas = list(model.generate_stream(ask, response_format=CODE_STEP_FORMAT, max_new_tokens=30))
    assert "".join(d.content for d in deltas if d.content) == deltas[-1].reply.content == reply.content
    with pytest.raises(ModelError, match="string fields only"):
        model.generate(ask, response_format={"type": "json_schema", "json_schema": {
            "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}})


def test_string_bodies_are_made_valid_json():
    assert string_end('abc", "x') == 3 and string_end('a\\"b"') == 4 and string_end("open") is None
    assert valid_body("line one\nline two") == "line one\\nline two"
    assert valid_body("ends in \\") == "ends in "
    assert json.loads('"' + valid_body("bad \\q escape") + '"') == "bad \\q escape"


def test_hugging_face_vision_models_get_image_parts_and_the_response_format(server, monkeypatch):
    import huggingface_hub.constants

    # The test session sets HF_HUB_OFFLINE=1; huggingface_hub may talk to the loopback server only.
    monkeypatch.setattr(huggingface_hub.constants, "is_offline_mode", lambda: False)
    model = load_model("hf:Qwen/Qwen2.5-VL-7B-Instruct", base_url=server.url, token="hf_test",
                       retry=RetryPolicy(max_retries=0))
    assert model.supports_images
    assert not load_model("hf:Qwen/Qwen2.5-Coder-32B-Instruct", base_url=server.url, token="hf_test").supports_images
    image = to_image(png())
    server.script = [{"type": "reply", "content": '{"thought": "t", "code": "print(1)"}'}]
    model.generate([{"role": "user", "content": [{"type": "text", "text": "Look."}, image.part()]}],
                   response_format=CODE_STEP_FORMAT)
    body = server.requests[0]
    assert body["messages"][0]["content"][1]["image_url"]["url"] == image.data_url()
    # huggingface_hub writes it the way a text-generation-inference endpoint reads it (the schema as `value`)
    assert body["response_format"] == {"type": "json_object", "value": CODE_STEP_SCHEMA}
