"""dmc-publish's options.

Each command's options have a module of their own; what they all share is in schemas/options.py.
"""

import math
import re
from dataclasses import dataclass

from schemas.options import REQUIRED, Group, option
from transforms.errors import InputError

# The Hub's repo names: a user or organisation, a slash, a name (letters, digits, - _ .).
REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
DEFAULT_BRANCH = "main"
# Seconds: huggingface_hub's DEFAULT_REQUEST_TIMEOUT, which its shared client does not apply.
# A hub that never answers is then given up on within 83 s, under the 2 minutes promised:
# 6 tries and 23 s of waits where huggingface_hub retries, 3 tries and 5 s where
# dmc-publish does (pipelines/publish.py).
DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class PublishOptions:
    dataset: str = option(
        REQUIRED,
        "generate's --output (its latest version), OUTPUT/latest, or one completed "
        "OUTPUT/versions/<version>: its dataset/ folder is what the repo receives",
        group=Group.IO,
        renamed_from=("version",),
    )
    repo_id: str = option(
        REQUIRED,
        "the Hugging Face Hub dataset repo, USER/NAME or ORG/NAME; created when missing",
        group=Group.HUB,
    )
    private: bool = option(
        False,
        "create the repo private (a repo that exists keeps its visibility)",
        group=Group.HUB,
    )
    revision: str = option(
        DEFAULT_BRANCH,
        "the branch to commit to; created from main when missing",
        group=Group.HUB,
    )
    dry_run: bool = option(
        False,
        "list the files that would be uploaded (path in the repo, bytes) and their total; "
        "upload nothing, contact no hub",
        group=Group.HUB,
    )
    timeout: float = option(
        DEFAULT_TIMEOUT,
        "seconds a request to the hub may wait for it (to connect, send or answer) before it "
        "fails; with the retries, a hub that never answers is given up on within 2 minutes",
        group=Group.HUB,
    )
    allow_held_back: bool = option(
        False,
        "publish a version its audit gate held back (generate --audit_gate fail: complete, "
        "never made the latest), with a warning; without it such a version is refused",
        group=Group.IO,
    )

    def validate(self) -> None:
        if not REPO_ID.fullmatch(self.repo_id):
            raise InputError(
                f"--repo_id {self.repo_id!r}: not a Hub repo id; give USER/NAME or ORG/NAME"
            )
        if not self.revision.strip():
            raise InputError("--revision: empty; give a branch name, e.g. main")
        if not (math.isfinite(self.timeout) and self.timeout > 0):
            raise InputError(f"--timeout {self.timeout}: give a number of seconds above 0, e.g. 10")
