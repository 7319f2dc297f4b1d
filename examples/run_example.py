"""``make example``: a fresh local broker, the topics and a worker, then examples/pipeline.py.

Everything lives under var/example/ and is stopped at the end (also on failure).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from stream.devtools import kafka_local
from stream.errors import GuardError
from stream.settings import PROJECT_ROOT, Settings

HOME = PROJECT_ROOT / "var" / "example"


def main() -> int:
    shutil.rmtree(HOME, ignore_errors=True)
    port, controller, web = kafka_local.free_ports(3)
    settings = Settings(kafka_home=HOME / "kafka", kafka_port=port, kafka_controller_port=controller,
                        broker=f"kafka://127.0.0.1:{port}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env.update(CG_BROKER=settings.broker, CG_DATA_DIR=str(HOME / "worker"), CG_WEB_PORT=str(web))
    worker = None
    try:
        info = kafka_local.start(settings, fresh=True)
        print(f"Kafka {info.version} ready at {info.bootstrap}")
        created = subprocess.run([sys.executable, "-m", "stream", "topics", "create"], env=env, cwd=PROJECT_ROOT)
        if created.returncode:  # topics create said why, in one line
            return created.returncode
        log = HOME / "worker.log"
        with open(log, "wb") as out:
            worker = subprocess.Popen([sys.executable, "-m", "stream", "worker", "-l", "info"], env=env,
                                      cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while "[^GuardWorker]: Ready" not in log.read_text(errors="replace"):
            if worker.poll() is not None or time.monotonic() > deadline:
                print(f"checkpoint-guard: error: the worker did not start; see {log}", file=sys.stderr)
                return 1
            time.sleep(0.3)
        print(f"worker ready (log {log})\n$ python examples/pipeline.py")
        return subprocess.run([sys.executable, str(Path(__file__).with_name("pipeline.py"))], env=env,
                              cwd=PROJECT_ROOT).returncode
    except GuardError as exc:  # the local broker did not start (no Java, a port taken, ...): its one line
        summary, _, tail = str(exc).partition("\n")
        if tail:
            print(tail, file=sys.stderr)
        print(f"checkpoint-guard: error: {summary}", file=sys.stderr)
        return 1
    finally:
        if worker is not None and worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
        kafka_local.stop(settings)


if __name__ == "__main__":
    sys.exit(main())
