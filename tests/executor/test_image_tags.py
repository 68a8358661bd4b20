"""image.remove_stale drops only the sandbox repository's old tags.

Why: it removed every tag of an old build, the k8s stand-in's own (`agentdeck-k8s-standin:<pid>`, given so
that its pods keep their image) included: another worktree's new build mid-run left the stand-in's pods
without an image, and the engine tried to pull one from a registry (every later claim of the run failed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.executor.docker import image


@dataclass
class _Image:
    tags: list[str]


@dataclass
class _Images:
    held: list[_Image]
    removed: list[str] = field(default_factory=list)

    def list(self, name: str) -> list[_Image]:
        return [i for i in self.held if any(t.startswith(name + ":") for t in i.tags)]

    def remove(self, tag: str) -> None:
        self.removed.append(tag)


@dataclass
class _Client:
    images: _Images


def test_only_the_sandbox_repositorys_old_tags_are_removed():
    new = f"{image.IMAGE_REPO}:new"
    client = _Client(_Images([_Image([f"{image.IMAGE_REPO}:old", "agentdeck-k8s-standin:4242"]), _Image([new])]))
    image.remove_stale(client, new)
    assert client.images.removed == [f"{image.IMAGE_REPO}:old"]
