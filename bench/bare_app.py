"""The baseline of the accept benchmark: a Starlette endpoint that reads the body and answers 202
with a small JSON document, doing nothing else, served by uvicorn like firmsift's API."""

from __future__ import annotations

import argparse
import socket

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def accept(request: Request) -> JSONResponse:
    await request.body()
    return JSONResponse({"job_id": "0", "status": "PENDING"}, status_code=202)


async def healthz(_request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


app = Starlette(routes=[Route("/domains/classify", accept, methods=["POST"]),
                        Route("/healthz", healthz, methods=["GET"])])

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    # Bound here, so the port the kernel picked is printed (first line on stdout) before serving.
    # IPPROTO_TCP named: a socket made with protocol 0 (socket.socket(), socket.create_server) is
    # not known to asyncio as TCP, so it never sets TCP_NODELAY on its connections and each
    # kept-alive response waited ~40 ms for a delayed ACK (Nagle): 363 instead of thousands of
    # requests/s, a baseline slower than the API it judges.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", parser.parse_args().port))
    print(listener.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app, log_config=None)).run(sockets=[listener])
