"""A TCP proxy on loopback that holds back what the server sends by a fixed delay, in order:
scripts/ha puts it between a standby and its primary to stand for a slow link, so that an
asynchronous failover has WAL in flight to lose. When the server's side ends, what is still
held back is dropped, as a link to a machine that died would drop it.

Usage: delay_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS
"""

import asyncio
import sys


async def pipe(reader, writer, delay):
    """Copies reader to writer; with a delay, each piece leaves `delay` seconds after it came,
    and whatever has not left when the reader ends is dropped."""
    queue = asyncio.Queue()

    async def send():
        loop = asyncio.get_running_loop()
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    loop = asyncio.get_running_loop()
    try:
        while data := await reader.read(65536):
            await queue.put((loop.time() + delay, data))
    except ConnectionError:
        pass
    if delay > 0:
        sender.cancel()
        writer.transport.abort()
        return
    await queue.put((0, None))
    try:
        await sender
    except ConnectionError:
        pass


async def main():
    listen_port, target_port, delay_ms = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

    async def accept(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, server_writer, 0), pipe(server_reader, client_writer, delay_ms / 1000))

    server = await asyncio.start_server(accept, "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


asyncio.run(main())
