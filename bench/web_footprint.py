"""What the web app adds to the API process's memory (the API must stay under 100 MB): resident
memory once `firmsift api`'s app is built (and Starlette's test client imported, in each variant), without the web app's routes, with them, and with them
after every page has been rendered once (templates compiled). Each figure is a fresh process.

    .venv/bin/python -m bench.web_footprint
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

BUILD = """
import sys, time
from pathlib import Path
from firmsift.entrypoints.cli import commands
from firmsift.entrypoints.wiring.runtime import start_container
from firmsift.entrypoints.settings import Settings
app = start_container(Settings(database_url='sqlite:///{db}')).api()
import starlette.testclient  # in every variant: the last one renders the pages through it (it imports httpx)
"""
WITHOUT_WEB = """
import sys, types
routes = types.ModuleType("firmsift.entrypoints.web.routes")
routes.web_routes = lambda **parts: []
security = types.ModuleType("firmsift.entrypoints.web.security")
security.SecurityHeaders = lambda app: app
sys.modules.update({"firmsift.entrypoints.web.routes": routes, "firmsift.entrypoints.web.security": security})
"""
RENDER = """
from starlette.testclient import TestClient
with TestClient(app, base_url="http://localhost") as client:  # a host name the API answers for by default
    token = client.get("/").text.split('name="csrf-token" content="')[1].split('"')[0]
    made = client.post("/new/submit?kind=list", content=b"a.com\\nb.com\\n",
                       headers={"content-type": "text/plain", "x-csrf-token": token}).json()
    for path in ("/", "/new", made["url"], made["url"] + "/rows", made["url"] + "/review", made["url"] + "/export.csv"):
        assert client.get(path).status_code == 200, path
"""
REPORT = """
status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
cpu = time.process_time()
print(f"{int(status['VmRSS'].split()[0]) / 1024:.1f} MiB resident, {cpu:.2f} CPU s, "
      f"jinja2 {'jinja2' in sys.modules}, litellm {'litellm' in sys.modules}")
"""


def main() -> None:
    for name, parts in (("without the web app", (WITHOUT_WEB, BUILD)), ("with the web app", (BUILD,)),
                        ("with the web app, every page rendered", (BUILD, RENDER))):
        with tempfile.TemporaryDirectory() as folder:
            code = "".join(parts + (REPORT,)).replace("{db}", f"{folder}/api.db")
            run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
            if run.returncode:
                raise SystemExit(f"{name} failed:\n{run.stderr}")
            print(f"{name}: {run.stdout.strip()}")


if __name__ == "__main__":
    main()
