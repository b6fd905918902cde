"""A Hugging Face Hub stand-in on loopback: the endpoints huggingface_hub's create_repo,
create_branch, list_repo_files and create_commit send (create_commit: validate-yaml for a
README.md, preupload, commit), over repos held in memory.

Every file is answered as a regular (not LFS) upload, so a commit carries the bytes
themselves, base64 in its ndjson lines. Any other request is answered 404 and recorded
in ``unexpected``, for the test to assert there was none. The server stops when its
context ends, or by itself after ``LIFETIME`` seconds if a test hangs.
"""

import base64
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LIFETIME = 120  # seconds
# What a new repo holds, as on the Hub: its .gitattributes on main.
GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
# A request with this token is refused (401), as the Hub refuses a token without rights.
REFUSED_TOKEN = "hf_refused"
# What the client asks for itself, whatever the call (which AI agent runs it, for its
# user agent: best effort, a 404 is fine): answered 404, not counted as unexpected.
CLIENT_OWN = ("/api/agent-harnesses",)
REPO_REQUEST = re.compile(
    r"/api/(?P<type>model|dataset|space)s/(?P<repo>[^/]+/[^/]+)/"
    r"(?P<action>tree|preupload|commit|branch)/(?P<revision>[^/]+)"
)


@dataclass
class Repo:
    type: str
    visibility: str | None
    branches: dict[str, dict[str, bytes]] = field(
        default_factory=lambda: {"main": {".gitattributes": GITATTRIBUTES}}
    )
    commits: list[dict] = field(default_factory=list)  # {"revision", "header", "deleted"}


@dataclass
class Hub:
    url: str
    repos: dict[str, Repo] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    authorizations: set[str] = field(default_factory=set)


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 30  # a client that stops sending does not hold a thread

        def _answer(self, status: int, body: object = None) -> None:
            data = json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length", 0)))

        def _authorized(self) -> bool:
            authorization = self.headers.get("Authorization", "")
            hub.authorizations.add(authorization)
            if authorization == f"Bearer {REFUSED_TOKEN}":
                self._body()
                self._answer(401, {"error": "Invalid credentials in Authorization header"})
                return False
            return True

        def _refuse(self) -> None:
            hub.unexpected.append(f"{self.command} {self.path}")
            self._answer(404, {"error": "not in the stub"})

        def do_GET(self) -> None:
            if urlsplit(self.path).path in CLIENT_OWN:
                return self._answer(404, {"error": "not in the stub"})
            if not self._authorized():
                return
            match = REPO_REQUEST.fullmatch(urlsplit(self.path).path)
            if match is None or match["action"] != "tree":
                return self._refuse()
            files = self._branch(match)
            if files is None:
                return self._answer(404, {"error": "revision not found"})
            self._answer(
                200,
                [
                    {
                        "type": "file",
                        "path": path,
                        "size": len(data),
                        "oid": hashlib.sha1(data).hexdigest(),
                    }
                    for path, data in sorted(files.items())
                ],
            )

        def do_POST(self) -> None:
            if not self._authorized():
                return
            body, path = self._body(), urlsplit(self.path).path
            if path == "/api/repos/create":
                return self._create(json.loads(body))
            if path == "/api/validate-yaml":
                return self._answer(200, {"errors": [], "warnings": []})
            match = REPO_REQUEST.fullmatch(path)
            if match is None or match["action"] == "tree":
                return self._refuse()
            repo = hub.repos.get(match["repo"])
            if repo is None or repo.type != match["type"]:
                return self._answer(404, {"error": "repository not found"})
            revision = unquote(match["revision"])
            if match["action"] == "branch":
                if revision in repo.branches:
                    return self._answer(409, {"error": "branch exists"})
                repo.branches[revision] = dict(repo.branches["main"])
                return self._answer(200)
            if revision not in repo.branches:
                return self._answer(404, {"error": "revision not found"})
            if match["action"] == "preupload":
                files = json.loads(body)["files"]
                return self._answer(
                    200,
                    {
                        "files": [
                            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                            for f in files
                        ]
                    },
                )
            self._commit(match["repo"], repo, revision, body)

        def _branch(self, match: re.Match) -> dict[str, bytes] | None:
            repo = hub.repos.get(match["repo"])
            if repo is None or repo.type != match["type"]:
                return None
            return repo.branches.get(unquote(match["revision"]))

        def _create(self, payload: dict) -> None:
            repo_id = f"{payload['organization']}/{payload['name']}"
            url = f"{hub.url}/{payload.get('type', 'model')}s/{repo_id}"
            if repo_id in hub.repos:  # the Hub's conflict names the repo too
                return self._answer(409, {"error": "You already created this repo", "url": url})
            hub.repos[repo_id] = Repo(payload.get("type", "model"), payload.get("visibility"))
            self._answer(200, {"url": url})

        def _commit(self, repo_id: str, repo: Repo, revision: str, body: bytes) -> None:
            files = repo.branches[revision]
            commit = {"revision": revision, "deleted": []}
            for line in body.splitlines():
                item = json.loads(line)
                value = item["value"]
                if item["key"] == "header":
                    commit["header"] = value
                elif item["key"] == "file":
                    files[value["path"]] = base64.b64decode(value["content"])
                elif item["key"] == "deletedFile":
                    del files[value["path"]]
                    commit["deleted"].append(value["path"])
                else:
                    hub.unexpected.append(f"commit operation {item['key']}")
                    return self._answer(400, {"error": f"{item['key']} not in the stub"})
            repo.commits.append(commit)
            oid = f"{len(repo.commits):040x}"
            self._answer(
                200,
                {"commitUrl": f"{hub.url}/datasets/{repo_id}/commit/{oid}", "commitOid": oid},
            )

        def log_message(self, *args) -> None:
            pass

    return Handler


@contextmanager
def stub_hub() -> Iterator[Hub]:
    """A running stub on 127.0.0.1 (a free port); ``Hub.url`` is the endpoint to give HfApi."""
    hub = Hub(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    deadline = threading.Timer(LIFETIME, server.shutdown)
    deadline.daemon = True
    deadline.start()
    try:
        yield hub
    finally:
        deadline.cancel()
        server.shutdown()
        server.server_close()
        thread.join()
