"""A loopback TCP forwarder to put between firmsift and a backend (PostgreSQL, the SQS emulator)
and cut on demand: `stop()` is an outage (listener closed, live connections reset), `start()`
brings the same port back.

    with TcpProxy("127.0.0.1", 5432) as proxy:
        url = f"postgresql://...@127.0.0.1:{proxy.port}/db"
        ...
        proxy.stop()    # connects are refused, open connections see a reset
        proxy.start()   # the same port again
        proxy.freeze()  # a network partition: connects and bytes go nowhere, nothing is refused
        proxy.thaw()    # the held bytes flow again, as TCP's retransmissions would deliver them

It runs an asyncio loop in a daemon thread of the test process; the methods are thread-safe and
return once the change has taken effect.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from typing import Any

_CHUNK = 65536
_CONTROL_TIMEOUT = 10.0


class TcpProxy:
    """Forwards every connection on 127.0.0.1:`port` to `target_host`:`target_port`."""

    def __init__(self, target_host: str, target_port: int, *, port: int = 0) -> None:
        self.target = (target_host, target_port)
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._flowing: asyncio.Event | None = None  # made on the loop's thread, in _start
        self.connections_total = 0  # accepted since creation, across outages
        self.connections_reset = 0  # cut by stop()
        self._thread.start()

    @property
    def port(self) -> int:
        return self._port

    @property
    def listening(self) -> bool:
        return self._server is not None

    def start(self) -> int:
        """Listen (again) on the proxy's port; returns it. The first start picks a free port
        unless one was given."""
        return self._call(self._start())

    def stop(self) -> int:
        """An outage: close the listener (new connects are refused) and reset every open
        connection, both ways. Returns how many connections were cut."""
        return self._call(self._stop())

    def freeze(self) -> None:
        """A partition, not a refusal: new connections are accepted but never reach the target,
        and no byte moves either way on open ones, until thaw()."""
        self._call(self._set_flowing(False))

    def thaw(self) -> None:
        self._call(self._set_flowing(True))

    def close(self) -> None:
        """Stop and end the proxy's thread; the proxy cannot be started again."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self.stop()
            self._call(self._cancel_tasks())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_CONTROL_TIMEOUT)
        self._loop.close()

    def __enter__(self) -> TcpProxy:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(_CONTROL_TIMEOUT)

    async def _cancel_tasks(self) -> None:
        """End the connection handlers still waiting (on a frozen proxy, or a half-closed pump)."""
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _set_flowing(self, flowing: bool) -> None:
        assert self._flowing is not None, "start() the proxy first"
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _start(self) -> int:
        if self._flowing is None:
            self._flowing = asyncio.Event()
            self._flowing.set()
        if self._server is None:
            # reuse_address: the port is taken back at once after stop(), whatever TIME_WAITs remain.
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self._port, reuse_address=True)
            self._port = self._server.sockets[0].getsockname()[1]
        return self._port

    async def _stop(self) -> int:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        cut = 0
        for writer in list(self._writers):
            _reset(writer)
            cut += 1
        self._writers.clear()
        self.connections_reset += cut
        await asyncio.sleep(0)  # let the pumps see their sockets gone
        return cut

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.connections_total += 1
        assert self._flowing is not None
        self._writers.add(client_writer)  # a stop() while frozen resets held connections too
        await self._flowing.wait()
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            _reset(client_writer)
            return
        if self._server is None or client_writer.is_closing():  # stopped while we were connecting upstream
            _reset(client_writer)
            _reset(upstream_writer)
            return
        self._writers.update((client_writer, upstream_writer))
        try:
            await asyncio.gather(
                _pump(client_reader, upstream_writer, self._flowing),
                _pump(upstream_reader, client_writer, self._flowing),
                return_exceptions=True,
            )
        finally:
            for writer in (client_writer, upstream_writer):
                self._writers.discard(writer)
                if not writer.is_closing():
                    writer.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flowing: asyncio.Event) -> None:
    try:
        while data := await reader.read(_CHUNK):
            await flowing.wait()  # frozen: hold the bytes, as a partitioned network would
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        # Half-close: the other direction may still be talking (a client that sent its last bytes).
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof() and not writer.is_closing():
                writer.write_eof()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST, not FIN: the peer sees 'connection reset', as when a server or a
    network path dies, instead of an orderly end of stream."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
