"""A GCS API server and a GCE metadata server on loopback, for the cloud I/O tests.

The storage server is ``gcp-storage-emulator`` (the JSON API that
google-cloud-storage, Beam's GCS client, speaks); ``STORAGE_EMULATOR_HOST``
points the client at it. Beam asks google-auth for credentials before it
builds the client; the metadata server answers that the way a Dataflow
worker's metadata server does (project id, service account, access token),
so the real credential path runs instead of ~20 s of retries and an
anonymous fallback. The emulator ignores GCS's generation-match
preconditions, which version claims rely on (``pipelines/store/claims.py``);
:func:`honour_preconditions` adds them to its insert and delete handlers.
"""

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gcp_storage_emulator import server
from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import objects
from gcp_storage_emulator.server import create_server

PROJECT = "dmc-test-project"
EMAIL = f"worker@{PROJECT}.iam.gserviceaccount.com"
_ACCOUNTS = "computeMetadata/v1/instance/service-accounts"
_ACCOUNT_INFO = json.dumps(
    {
        "email": EMAIL,
        "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "aliases": ["default"],
    }
)
_TOKEN = json.dumps({"access_token": "emulator-token", "expires_in": 3600, "token_type": "Bearer"})
# The account answers as "default" and by its email, as a GCE metadata server's does:
# google-auth asks by "default" first, then, refreshing credentials it has resolved, by the
# email (a run that refreshed once got a 404 there and failed to list its input).
METADATA = {
    "/": "",
    "/computeMetadata/v1/project/project-id": PROJECT,
    **{f"/{_ACCOUNTS}/{account}/": _ACCOUNT_INFO for account in ("default", EMAIL)},
    **{f"/{_ACCOUNTS}/{account}/token": _TOKEN for account in ("default", EMAIL)},
}


class _MetadataHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = METADATA.get(self.path.split("?")[0])
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Metadata-Flavor", "Google")
        self.send_header("Content-Type", "application/json" if body[:1] == "{" else "text/plain")
        self.end_headers()
        self.wfile.write(body.encode("utf-8"))

    def log_message(self, *args) -> None:
        pass


class _RefusingHandler(BaseHTTPRequestHandler):
    """GCS's answer to credentials without access, for every request."""

    def _refuse(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        message = f"{EMAIL} does not have storage access"
        body = json.dumps({"error": {"code": 403, "message": message}}).encode("utf-8")
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    def log_message(self, *args) -> None:
        pass


_PRECONDITIONS = threading.Lock()  # a check and its write are one step, as on GCS


def _generation(request, storage) -> str:
    """The object's current generation, "0" when it does not exist."""
    name = request.params.get("object_id") or (request.query.get("name") or [None])[0]
    if name is None:
        name = request.data["meta"].get("name")
    try:
        return str(storage.get_file_obj(request.params["bucket_name"], name)["generation"])
    except NotFound:
        return "0"


def _with_precondition(handler):
    def handle(request, response, storage, *args, **kwargs):
        wanted = request.query.get("ifGenerationMatch")
        with _PRECONDITIONS:
            if wanted and _generation(request, storage) != wanted[0]:
                response.status = HTTPStatus.PRECONDITION_FAILED
                response.json({"error": {"code": 412, "message": "conditionNotMet"}})
                return None
            return handler(request, response, storage, *args, **kwargs)

    return handle


def honour_preconditions() -> None:
    """Makes the emulator's object insert and delete honour ``ifGenerationMatch``."""
    if getattr(objects.insert, "honours_preconditions", False):
        return
    replaced = {}
    for name in ("insert", "delete"):
        original = getattr(objects, name)
        replaced[original] = _with_precondition(original)
        replaced[original].honours_preconditions = True
        setattr(objects, name, replaced[original])
    for _, handlers in server.HANDLERS:
        for method, handler in handlers.items():
            handlers[method] = replaced.get(handler, handler)


def _serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@contextmanager
def gcs_servers() -> Iterator[dict[str, str]]:
    """Starts the servers; yields the environment variables that point clients at them.

    ``REFUSING_STORAGE_HOST`` is a GCS endpoint that denies everything (the
    emulator has no IAM): put it in ``STORAGE_EMULATOR_HOST`` to see what a
    user without permission sees.
    """
    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    honour_preconditions()
    metadata, refusing = _serve(_MetadataHandler), _serve(_RefusingHandler)
    storage = create_server("127.0.0.1", 0, in_memory=True)
    storage.start()
    metadata_host = f"127.0.0.1:{metadata.server_address[1]}"
    try:
        yield {
            "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{storage._api._httpd.server_address[1]}",
            "REFUSING_STORAGE_HOST": f"http://127.0.0.1:{refusing.server_address[1]}",
            "GCE_METADATA_HOST": metadata_host,
            "GCE_METADATA_IP": metadata_host,
            "GOOGLE_CLOUD_PROJECT": PROJECT,
        }
    finally:
        storage.stop()
        metadata.shutdown()
        refusing.shutdown()
