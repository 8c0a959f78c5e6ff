"""Whether a container image is pinned: a tag other than `latest`, or a digest. The pack judges every container of a
preview with it (serving.py), and the program's settings judge dlcImage with it (infra/settings/rules_serving.py).
Standard library only, as internet.py.
"""

from __future__ import annotations

DIGEST_MARKER = "@sha256:"


def unpinned_image_reason(image: str) -> str | None:
    """Why `image` may pull another image later, or None when it is pinned."""
    if DIGEST_MARKER in image:
        return None
    last_part = image.rsplit("/", 1)[-1]
    if ":" not in last_part:
        return "has no tag (which means 'latest')"
    if last_part.rsplit(":", 1)[1] == "latest":
        return "uses the 'latest' tag"
    return None
