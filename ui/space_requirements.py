"""The Space's pinned requirements: `requirements-space.txt`, generated from `requirements.txt` and `constraints.txt`.

A Space runs `pip install -r requirements.txt` against the public index, so loose names there drift from what the
test suite ran against. This module walks what `requirements.txt` reaches, transitively (the packages' own
requirements as installed in the development environment, markers evaluated for the Space's Linux and Python),
and pins each to its version in `constraints.txt`. The deploy uploads the result as the Space's `requirements.txt`.

`python -m ui.space_requirements` (`make space-requirements`) writes the file; `check_current` (stdlib only, so the
small deploy environment can run it) refuses a file made from another requirements.txt or whose pins differ from
constraints.txt; tests/ui/test_space_requirements.py regenerates it and fails when the tree changed.
The walk refuses torch and CUDA packages: on the public index torch is the multi-GB CUDA build.
"""
from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
OUTPUT_NAME = "requirements-space.txt"
# Distributions that on the public index are CUDA builds (or pull them): never part of the Space's install.
GPU_PREFIXES = ("torch", "triton", "nvidia-", "jax", "tensorflow")
_DIGEST_LINE = re.compile(r"^# inputs-sha256: ([0-9a-f]{64})$", re.MULTILINE)
_PIN_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


class SpaceRequirementsError(Exception):
    """The pinned requirements cannot be made or are stale; the message says what to run."""


def normalize(name: str) -> str:
    """PEP 503 name: how pip compares distribution names."""
    return re.sub(r"[-_.]+", "-", name).lower()


def inputs_digest(root: Path = PROJECT_ROOT) -> str:
    """A hash of requirements.txt: a changed list makes the generated file stale. (A changed version in
    constraints.txt is caught pin by pin; a changed dependency tree by the test that regenerates the file.)"""
    return hashlib.sha256((root / "requirements.txt").read_bytes()).hexdigest()


def read_constraints(root: Path = PROJECT_ROOT) -> dict[str, tuple[str, str]]:
    """normalized name -> (name as written, version) for every `name==version` line of constraints.txt."""
    pins: dict[str, tuple[str, str]] = {}
    for raw in (root / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        match = _PIN_LINE.match(line)
        if match:
            pins[normalize(match.group(1))] = (match.group(1), match.group(2))
    return pins


def read_pins(path: Path) -> dict[str, str]:
    """normalized name -> version of a pinned requirements file (comments skipped)."""
    pins: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        match = _PIN_LINE.match(line)
        if match:
            pins[normalize(match.group(1))] = match.group(2)
    return pins


def space_environment(root: Path = PROJECT_ROOT) -> dict[str, str]:
    """Marker values of the Space's interpreter: Linux x86_64, CPython at spaces.yaml's python_version."""
    from packaging.markers import default_environment

    text = (root / "spaces.yaml").read_text(encoding="utf-8")
    found = re.search(r"^python_version:\s*\"?([0-9]+\.[0-9]+)\"?\s*$", text, re.MULTILINE)
    if not found:
        raise SpaceRequirementsError("spaces.yaml has no python_version: the Space's Python decides the pins")
    env: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    if env["python_version"] != found.group(1):
        raise SpaceRequirementsError(
            f"spaces.yaml runs Python {found.group(1)} but this environment is {env['python_version']}: generate "
            "the pins with the Python the tests ran on, which must be the Space's")
    # The patch level stays this interpreter's (the tests ran on it): markers such as `python_full_version <
    # "3.11.3"` then select what was tested.
    env.update(sys_platform="linux",
               platform_system="Linux", os_name="posix", platform_machine="x86_64",
               implementation_name="cpython", platform_python_implementation="CPython")
    return env


def reached(root: Path = PROJECT_ROOT) -> set[str]:
    """Normalized names of every distribution `pip install -r requirements.txt` reaches on the Space."""
    from importlib import metadata

    from packaging.requirements import Requirement

    env = space_environment(root)
    queue: list[tuple[str, frozenset[str]]] = []
    for raw in (root / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            queue.append((normalize(req.name), frozenset(req.extras)))
    seen: set[tuple[str, frozenset[str]]] = set()
    while queue:
        name, extras = queue.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError as exc:
            raise SpaceRequirementsError(
                f"{name} (reached from requirements.txt) is not installed here, so its own requirements are "
                f"unknown: run `make install` first") from exc
        for spec in requires:
            req = Requirement(spec)
            if req.marker is not None and not any(req.marker.evaluate({**env, "extra": extra})
                                                  for extra in ("", *extras)):
                continue
            queue.append((normalize(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


def render(root: Path = PROJECT_ROOT) -> str:
    """The text of requirements-space.txt for the current requirements.txt, constraints.txt and environment."""
    names = reached(root)
    gpu = sorted(name for name in names if name.startswith(GPU_PREFIXES))
    if gpu:
        raise SpaceRequirementsError(
            f"requirements.txt reaches {', '.join(gpu)}: on the Space's public index that is the CUDA build "
            "(gigabytes); move what needs it to requirements-local.txt")
    constraints = read_constraints(root)
    unpinned = sorted(name for name in names if name not in constraints)
    if unpinned:
        raise SpaceRequirementsError(
            f"not pinned in constraints.txt: {', '.join(unpinned)} (add the tested version of each)")
    lines = [
        "# The Space's requirements.txt, generated by `make space-requirements` (python -m ui.space_requirements):",
        "# everything requirements.txt reaches on the Space (Linux, the Python of spaces.yaml), each pinned to the",
        "# version constraints.txt froze for the test suite. Do not edit; regenerate after changing either file.",
        f"# inputs-sha256: {inputs_digest(root)}",
    ]
    lines += [f"{constraints[name][0]}=={constraints[name][1]}" for name in sorted(names)]
    return "\n".join(lines) + "\n"


def check_current(root: Path = PROJECT_ROOT) -> Path:
    """The generated file, after checking (stdlib only) that it was made from the current inputs and that every
    pin is constraints.txt's version; raises SpaceRequirementsError naming the command that fixes it."""
    path = root / OUTPUT_NAME
    if not path.is_file():
        raise SpaceRequirementsError(f"{OUTPUT_NAME} is missing: run `make space-requirements`")
    text = path.read_text(encoding="utf-8")
    found = _DIGEST_LINE.search(text)
    if not found or found.group(1) != inputs_digest(root):
        raise SpaceRequirementsError(
            f"{OUTPUT_NAME} was generated from another requirements.txt: run "
            "`make space-requirements` and commit the result")
    constraints = read_constraints(root)
    for name, version in read_pins(path).items():
        if name not in constraints or constraints[name][1] != version:
            raise SpaceRequirementsError(
                f"{OUTPUT_NAME} pins {name}=={version}, constraints.txt says "
                f"{constraints[name][1] if name in constraints else 'nothing'}: run `make space-requirements`")
    return path


def main() -> int:
    try:
        text = render()
    except SpaceRequirementsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    (PROJECT_ROOT / OUTPUT_NAME).write_text(text, encoding="utf-8")
    count = sum(1 for line in text.splitlines() if not line.startswith("#"))
    print(f"Wrote {OUTPUT_NAME}: {count} packages pinned to constraints.txt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
