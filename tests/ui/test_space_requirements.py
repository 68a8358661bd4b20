"""requirements-space.txt: what the Space installs, pinned to the versions the test suite ran against."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ui import space_requirements as sr

ROOT = sr.PROJECT_ROOT


def test_the_checked_in_file_is_what_the_generator_makes_now() -> None:
    """Regenerated from requirements.txt, constraints.txt and the installed packages' own requirements: a changed
    dependency tree or version fails here until `make space-requirements` is run."""
    assert (ROOT / sr.OUTPUT_NAME).read_text(encoding="utf-8") == sr.render(), \
        "requirements-space.txt is stale: run `make space-requirements`"


def test_every_pin_is_the_tested_version_and_nothing_is_left_loose() -> None:
    constraints = sr.read_constraints()
    pins = sr.read_pins(ROOT / sr.OUTPUT_NAME)
    assert len(pins) > 50 and {"gradio", "litellm", "authlib", "itsdangerous", "pandas"} <= set(pins)
    for name, version in pins.items():
        assert constraints[name][1] == version, name
    body = [line for line in (ROOT / sr.OUTPUT_NAME).read_text().splitlines() if line and not line.startswith("#")]
    assert len(body) == len(pins)  # every line is name==version: no range, no bare name
    assert pins.keys() == sr.reached()


def test_the_space_never_reaches_a_cuda_build() -> None:
    """On the Space's public index torch is the CUDA build: nothing the Space installs may pull it."""
    assert not [name for name in sr.read_pins(ROOT / sr.OUTPUT_NAME) if name.startswith(sr.GPU_PREFIXES)]
    assert "torch" in sr.read_constraints()  # it is tested (requirements-local.txt), just never sent to the Space


def _copy(tmp_path: Path) -> Path:
    for name in ("requirements.txt", "constraints.txt", "spaces.yaml", sr.OUTPUT_NAME):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_a_stale_file_is_refused_with_the_command_that_fixes_it(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    assert sr.check_current(root) == root / sr.OUTPUT_NAME
    constraints = (root / "constraints.txt").read_text()
    gradio = next(line for line in constraints.splitlines() if line.startswith("gradio=="))
    (root / "constraints.txt").write_text(constraints.replace(gradio + "\n", "gradio==0.0.1\n"))
    with pytest.raises(sr.SpaceRequirementsError, match=r"pins gradio==.* constraints.txt says 0.0.1.*make space-req"):
        sr.check_current(root)
    (root / "constraints.txt").write_text(constraints)
    (root / "requirements.txt").write_text((root / "requirements.txt").read_text() + "tabulate\n")
    with pytest.raises(sr.SpaceRequirementsError, match="another requirements.txt: run `make space-requirements`"):
        sr.check_current(root)
    (root / sr.OUTPUT_NAME).unlink()
    with pytest.raises(sr.SpaceRequirementsError, match="missing"):
        sr.check_current(root)


def test_a_package_that_would_pull_torch_is_refused(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "requirements.txt").write_text((root / "requirements.txt").read_text() + "accelerate\n")  # needs torch
    with pytest.raises(sr.SpaceRequirementsError, match="reaches torch.*CUDA build"):
        sr.render(root)


def test_a_deploy_refuses_a_stale_file_before_any_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture) -> None:
    from ui import deploy

    root = _copy(tmp_path)
    (root / "app.py").write_text("print('app')\n")
    (root / "requirements.txt").write_text((root / "requirements.txt").read_text() + "tabulate\n")
    monkeypatch.setattr(deploy, "PROJECT_ROOT", root)
    assert deploy.main(["me/demo", "--endpoint", "http://127.0.0.1:9", "--token", "hf_x"]) == 2
    assert "make space-requirements" in capsys.readouterr().err
