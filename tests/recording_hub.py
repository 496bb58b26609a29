"""A local HTTP server that answers the Hugging Face Hub's upload API and records every request.

It speaks the part of the protocol `HfApi.create_repo` + `upload_folder` use (repo creation, README
metadata validation, preupload, commit) and asks for every file to be sent inline ("regular"
upload mode), so a commit's files can be decoded and compared with the local folder. It does not
emulate LFS or Xet transfers: the real Hub would route large binary files through those.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]


@dataclass
class RecordingHub:
    requests: list[Request] = field(default_factory=list)
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def committed_files(self, repo_id: str) -> dict[str, bytes]:
        """{path: content} of every file the commits to `repo_id` carried."""
        files = {}
        for request in self.requests:
            if request.path.startswith(f"/api/datasets/{repo_id}/commit/"):
                for line in request.ndjson():
                    if line["key"] == "file":
                        files[line["value"]["path"]] = base64.b64decode(line["value"]["content"])
        return files


def _handler(hub: RecordingHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _record(self) -> Request:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            hub.requests.append(request)
            return request

        def do_GET(self) -> None:
            self._record()
            self._reply(404, {"error": "not found"})

        def do_POST(self) -> None:
            request = self._record()
            if not request.headers.get("authorization", "").startswith("Bearer "):
                return self._reply(401, {"error": "no token"})
            path = request.path.split("?")[0]
            if path == "/api/repos/create":
                data = request.json()
                repo_id = f"{data['organization']}/{data['name']}"
                hub.repos[repo_id] = data
                return self._reply(200, {"url": f"{hub.url}/datasets/{repo_id}"})
            if path == "/api/validate-yaml":
                content = request.json()["content"]
                header = yaml.safe_load(content.split("---")[1]) if content.startswith("---") else None
                if not isinstance(header, dict):
                    return self._reply(400, {"errors": [{"message": "no YAML metadata"}]})
                return self._reply(200, {})
            if "/preupload/" in path:
                files = request.json()["files"]
                return self._reply(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                                   for f in files]})
            if "/commit/" in path:
                repo_id = path.removeprefix("/api/datasets/").split("/commit/")[0]
                oid = "0" * 40
                return self._reply(200, {"commitUrl": f"{hub.url}/datasets/{repo_id}/commit/{oid}",
                                         "commitOid": oid, "pullRequestUrl": None})
            return self._reply(404, {"error": f"no route {path}"})

    return Handler


def start_recording_hub() -> RecordingHub:
    hub = RecordingHub()
    hub.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    threading.Thread(target=hub.server.serve_forever, daemon=True).start()
    return hub
