"""A GCS API server and a GCE metadata server on loopback, for the cloud I/O tests.

The storage server is ``gcp-storage-emulator`` (the JSON API that
google-cloud-storage, Beam's GCS client, speaks); ``STORAGE_EMULATOR_HOST``
points the client at it. Beam asks google-auth for credentials before it
builds the client; the metadata server answers that the way a Dataflow
worker's metadata server does (project id, service account, access token),
so the real credential path runs instead of ~20 s of retries and an
anonymous fallback. The emulator ignores GCS's generation-match
preconditions, which version claims rely on (``pipelines/store/claims.py``);
:func:`_serialise_handlers` adds them to its insert and delete handlers.
The emulator's own server answers one request at a time, so a client
stopped mid-request stalls every other; it is served here threaded, with
storage access serialised once each request's body is in.
"""

import json
import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gcp_storage_emulator import server
from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import objects
from gcp_storage_emulator.storage import Storage

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


_STORAGE = threading.Lock()  # one request at a time in storage; a check and its write are one step


def _generation(request, storage) -> str:
    """The object's current generation, "0" when it does not exist."""
    name = request.params.get("object_id") or (request.query.get("name") or [None])[0]
    if name is None:
        name = request.data["meta"].get("name")
    try:
        return str(storage.get_file_obj(request.params["bucket_name"], name)["generation"])
    except NotFound:
        return "0"


def _one_at_a_time(handler, *, preconditions: bool):
    """Reads the request's body, then runs ``handler`` alone on the storage.

    The body is read before the lock is taken, and the response is written
    after it is released (by the emulator's router): a client stopped
    mid-request (``SIGSTOP`` in test_gcs) then holds only its own thread,
    never the other clients' requests.
    """

    def handle(request, response, storage, *args, **kwargs):
        request.data  # noqa: B018 -- reads the body from the socket
        wanted = request.query.get("ifGenerationMatch") if preconditions else None
        with _STORAGE:
            if wanted and _generation(request, storage) != wanted[0]:
                response.status = HTTPStatus.PRECONDITION_FAILED
                response.json({"error": {"code": 412, "message": "conditionNotMet"}})
                return None
            return handler(request, response, storage, *args, **kwargs)

    handle.one_at_a_time = True
    return handle


def _serialise_handlers() -> None:
    """Makes every emulator handler safe on a threaded server, and insert and
    delete honour ``ifGenerationMatch``."""
    preconditioned = {objects.insert, objects.delete}
    for _, handlers in server.HANDLERS:
        for method, handler in handlers.items():
            if not getattr(handler, "one_at_a_time", False):
                handlers[method] = _one_at_a_time(handler, preconditions=handler in preconditioned)
    # the router falls back to objects.insert for uploads posted without /upload
    if not getattr(objects.insert, "one_at_a_time", False):
        objects.insert = _one_at_a_time(objects.insert, preconditions=True)


class _LoopbackServer(ThreadingHTTPServer):
    """Silent about a client that leaves before its answer is written (the tests kill runs
    mid-request); any other error in a handler is printed, as socketserver does."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _serve(handler) -> ThreadingHTTPServer:
    server = _LoopbackServer(("127.0.0.1", 0), handler)
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
    _serialise_handlers()
    metadata, refusing = _serve(_MetadataHandler), _serve(_RefusingHandler)
    storage = _serve(partial(server.RequestHandler, Storage(use_memory_fs=True)))
    metadata_host = f"127.0.0.1:{metadata.server_address[1]}"
    try:
        yield {
            "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{storage.server_address[1]}",
            "REFUSING_STORAGE_HOST": f"http://127.0.0.1:{refusing.server_address[1]}",
            "GCE_METADATA_HOST": metadata_host,
            "GCE_METADATA_IP": metadata_host,
            "GOOGLE_CLOUD_PROJECT": PROJECT,
        }
    finally:
        for running in (storage, metadata, refusing):
            running.shutdown()
            running.server_close()
