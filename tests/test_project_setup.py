"""The project's set-up: Space settings agree with the README, pins agree, the CI entry runs the tests."""
from __future__ import annotations

import re

import yaml

from tests.conftest import PROJECT_ROOT

SPACE_FIELDS = ("title", "emoji", "sdk", "sdk_version", "app_file", "python_version", "short_description",
                "suggested_hardware")


def _front_matter() -> dict:
    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, "README.md must start with the Space's YAML front matter"
    return yaml.safe_load(match.group(1))


def test_readme_front_matter_agrees_with_spaces_yaml():
    spaces = yaml.safe_load((PROJECT_ROOT / "spaces.yaml").read_text(encoding="utf-8"))
    front = _front_matter()
    for field in SPACE_FIELDS:
        assert field in spaces, f"spaces.yaml lacks {field}"
    assert front == spaces
    assert spaces["sdk"] == "gradio" and (PROJECT_ROOT / spaces["app_file"]).is_file()


def test_gradio_version_matches_requirements():
    spaces = yaml.safe_load((PROJECT_ROOT / "spaces.yaml").read_text(encoding="utf-8"))
    requirements = (PROJECT_ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(rf"^gradio(\[[a-z,]+\])?=={re.escape(spaces['sdk_version'])}$", requirements, re.MULTILINE)


def test_quick_start_has_two_commands_and_ci_runs_the_test_one():
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\s*(make \w[\w-]*)\s*$", quick_start, re.MULTILINE)
    assert commands == ["make run", "make test"]
    ci = (PROJECT_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci.split("\n", 3)[-1]


def test_license_file_matches_the_front_matter():
    spaces = yaml.safe_load((PROJECT_ROOT / "spaces.yaml").read_text(encoding="utf-8"))
    assert spaces["license"] == "apache-2.0"
    text = (PROJECT_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert spaces["models"] and spaces["tags"]


def test_app_module_has_a_demo_at_module_level(tmp_path, monkeypatch):
    import importlib.util

    import gradio as gr

    monkeypatch.setenv("AGENTDECK_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("AGENTDECK_MODEL", "embedded:smollm2")
    spec = importlib.util.spec_from_file_location("agentdeck_app_module", PROJECT_ROOT / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert isinstance(module.demo, gr.Blocks)


GPU_PACKAGES = ("torch", "triton", "nvidia-", "jax", "tensorflow")


def _requirement_names(path):
    return [name for name, _ in _requirements(path)]


def _requirements(path):
    """(name, extras) of each requirement line of a requirements file."""
    from packaging.requirements import Requirement

    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            found.append((req.name.lower(), frozenset(req.extras)))
    return found


def _space_install():
    """Every distribution `pip install -r requirements.txt` reaches, transitively, with the extras asked for (walked
    through the packages' metadata in this environment; a package not installed here ends its branch)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen, queue = set(), list(_requirements(PROJECT_ROOT / "requirements.txt"))
    while queue:
        name, extras = queue.pop()
        name = name.replace("_", "-").lower()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for spec in requires:
            req = Requirement(spec)
            if req.marker is not None and not any(req.marker.evaluate({"extra": extra}) for extra in {"", *extras}):
                continue
            queue.append((req.name.lower(), frozenset(req.extras)))
    return {name for name, _ in seen}


def test_space_requirements_never_pull_a_cuda_build():
    """What a Space installs (requirements.txt, from the public index) reaches no torch, transitively: every
    listed package's own requirements (with the extras requirements.txt asks for, as pip does) are walked in this
    environment."""
    seen = _space_install()
    for name in seen:
        assert not name.startswith(GPU_PACKAGES), f"requirements.txt pulls {name} (a CUDA build on the public index)"
    assert "gradio" in seen and "litellm" in seen and len(seen) > 50  # the walk really went through the tree
    assert "torch" in _requirement_names(PROJECT_ROOT / "requirements-local.txt")


def test_the_project_is_installed_as_a_package_and_imported_as_one():
    """`make install` runs `pip install -e .`: agents, tools and ui are importable packages of the installed
    distribution, from this checkout, and the app's data files (prompts, bundled examples) are package data."""
    import importlib.metadata
    import importlib.util
    import tomllib

    dist = importlib.metadata.distribution("agentdeck")
    assert dist.version == tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["version"]
    for package in ("agents", "tools", "ui"):
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin == str(PROJECT_ROOT / package / "__init__.py"), package
    data = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "*.yaml" in data["*"] and any(p.startswith("assets/") for p in data["ui"])


def test_the_space_installs_what_its_sign_in_button_needs_and_every_version_is_pinned():
    """A Space with `hf_oauth: true` shows the login button, and Gradio attaches its OAuth routes at start-up:
    without Gradio's `oauth` extra that is an ImportError. Everything the Space's install reaches is frozen in
    constraints.txt, so `make` installs what the tests ran against."""
    spaces = yaml.safe_load((PROJECT_ROOT / "spaces.yaml").read_text(encoding="utf-8"))
    assert spaces["hf_oauth"] is True
    assert ("gradio", frozenset({"oauth"})) in _requirements(PROJECT_ROOT / "requirements.txt")
    pinned = {name.replace("_", "-") for name, _ in _requirements(PROJECT_ROOT / "constraints.txt")}
    reached = _space_install()
    assert {"authlib", "itsdangerous"} <= reached
    unpinned = sorted(name for name in reached if name not in pinned)
    assert unpinned == [], f"not pinned in constraints.txt: {unpinned}"


def test_front_matter_lists_only_models_the_space_runs():
    """The Space has no torch, so no local model: `models:` is the Hugging Face model visitors chat with."""
    from agents.models.selection import HF_DEFAULT

    spaces = yaml.safe_load((PROJECT_ROOT / "spaces.yaml").read_text(encoding="utf-8"))
    assert spaces["models"] == [HF_DEFAULT.removeprefix("hf:")]


def test_make_test_lints_first_with_the_pinned_linters():
    """`make test` (what CI runs) runs `make lint` (ruff over everything, then mypy as pyproject.toml says) before
    the tests, with the ruff and mypy versions pinned in requirements-test.txt and constraints.txt."""
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    test_rule = re.search(r"^test:([^\n]*)$", makefile, re.MULTILINE)
    assert test_rule and "lint" in test_rule.group(1).split()
    lint_recipe = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "ruff check ." in lint_recipe and re.search(r"\bmypy\s*$", lint_recipe, re.MULTILINE)
    test_pins = (PROJECT_ROOT / "requirements-test.txt").read_text(encoding="utf-8")
    constraints = (PROJECT_ROOT / "constraints.txt").read_text(encoding="utf-8")
    for tool in ("mypy", "ruff"):
        pin = re.search(rf"^{tool}==(\S+)$", test_pins, re.MULTILINE)
        assert pin, f"requirements-test.txt does not pin {tool}"
        assert f"\n{tool}=={pin.group(1)}\n" in constraints
    mypy_config = (PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[tool.mypy]", 1)[1]
    assert "ignore_missing_imports = true" not in mypy_config.split("[[tool.mypy.overrides]]", 1)[0]


def test_architecture_names_only_paths_that_exist():
    """Modules move (files past ~400 lines are split): a path ARCHITECTURE.md names must still be there."""
    text = (PROJECT_ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = {token for token in re.findall(r"`([\w./-]+)`", text) if "/" in token}
    assert named, "ARCHITECTURE.md names no paths: the pattern above no longer finds them"
    missing = sorted(path for path in named if not (PROJECT_ROOT / path).exists())
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_architecture_lists_every_event():
    from agents.events import event_types

    text = (PROJECT_ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    listed = re.search(r"^Events: (.*?)\.$", text, re.MULTILINE | re.DOTALL)
    assert listed, "ARCHITECTURE.md must list the events in a paragraph starting 'Events: '"
    names, classes = set(re.findall(r"`(\w+)`", listed.group(1))), {cls.__name__ for cls in event_types()}
    assert names == classes, (f"ARCHITECTURE.md's Events list lacks {sorted(classes - names)} and names "
                              f"{sorted(names - classes)}, which agents/events.py does not define")


def test_every_environment_variable_the_code_names_is_a_documented_setting():
    """Every AGENTDECK_* name in the code is a field of the settings object (ui/config/), whose README table is
    checked against it (tests/ui/test_config.py), or one of the test suite's own variables."""
    from ui.config import variable_names
    from ui.config.app_settings import NOT_SETTINGS

    read = set()
    for package in ("agents", "tools", "ui"):
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            read |= set(re.findall(r"AGENTDECK_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    read |= set(re.findall(r"AGENTDECK_[A-Z0-9_]*[A-Z0-9]", (PROJECT_ROOT / "app.py").read_text(encoding="utf-8")))
    assert "AGENTDECK_MODEL" in read
    unknown = sorted(read - set(variable_names()) - NOT_SETTINGS - {"AGENTDECK_"})
    assert not unknown, f"ui/config/ has no setting for {unknown}"
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    undocumented = sorted(name for name in read - NOT_SETTINGS if name not in readme)
    assert not undocumented, f"README.md's configuration does not mention {undocumented}"
