"""``pip install .`` gives a working ``checkpoint-guard``: the wheel carries what the
commands need at run time (the broker's pom and log4j2 config, the sample trajectories)
and the metadata a package index shows.

The wheel is built by pip from this checkout and installed with ``--target`` into a temp
directory; the installed copy (not the checkout) then runs from another directory.
"""

from __future__ import annotations

import email
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from stream import __version__
from stream.settings import PROJECT_ROOT

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(wheel, install dir) — the wheel built from the checkout, installed without deps."""
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"),
                    str(PROJECT_ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp / "dist").glob("checkpoint_guard-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp / "site"),
                    str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return wheel, tmp / "site"


def run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env.update(PYTHONPATH=str(site), XDG_DATA_HOME=str(cwd / "data"), XDG_CACHE_HOME=str(cwd / "cache"))
    code = "import sys; from stream.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_wheel_declares_the_command_licence_urls_and_python_version(installed):
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = email.message_from_bytes(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))))
        entry = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "checkpoint-guard = stream.cli:main" in entry
    assert meta["Version"] == __version__ and meta["Requires-Python"] == ">=3.11"
    assert meta["License-Expression"] == "MIT" and any(n.endswith("licenses/LICENSE") for n in names)
    assert {u.split(",")[0] for u in meta.get_all("Project-URL")} >= {"Homepage", "Documentation", "Issues"}
    assert "Programming Language :: Python :: 3.11" in meta.get_all("Classifier")
    assert "stream/py.typed" in names and "Typing :: Typed" in meta.get_all("Classifier")


def test_every_public_address_names_the_same_home(installed):
    """pyproject's URLs and e-mail, the chart's home, the image's labels and the runbook URLs
    agree on one public home (pyproject.toml says it is assumed)."""
    import yaml

    wheel, _ = installed
    with zipfile.ZipFile(wheel) as z:
        meta = email.message_from_bytes(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))))
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    home = urls["Homepage"]
    assert home.startswith("https://github.com/") and all(u.startswith(home) for u in urls.values()), urls
    assert meta["Author-email"] == f"{home.split('/')[3]}@users.noreply.github.com" and meta["Author"]
    chart = yaml.safe_load((PROJECT_ROOT / "deploy" / "helm" / "checkpoint-guard" / "Chart.yaml").read_text())
    assert chart["home"] == home and chart["sources"] == [home]
    dockerfile = (PROJECT_ROOT / "deploy" / "Dockerfile").read_text()
    assert f'org.opencontainers.image.source="{home}"' in dockerfile
    rules = (PROJECT_ROOT / "deploy" / "prometheus" / "rules.yml").read_text()
    assert rules.count(f"{home}/blob/main/docs/OPERATIONS.md#") == rules.count("runbook_url:")


def test_pip_show_has_no_blank_field(installed):
    """What `pip show` prints for the installed wheel (pip >= 25.1 reads PEP 639's License-Expression)."""
    _, site = installed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CG_", "PYTHON"))}
    env["PYTHONPATH"] = str(site)
    done = subprocess.run([sys.executable, "-m", "pip", "show", "checkpoint-guard"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    fields = dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in done.stdout.splitlines())
    assert fields["Location"] == str(site)  # the wheel's copy, not the checkout's editable install
    assert fields["License-Expression"] == "MIT" and fields["Home-page"].startswith("https://github.com/")
    blank = [name for name, value in fields.items() if not value.strip() and name != "Required-by"]
    assert blank == [], blank


def test_the_image_labels_carry_the_packages_version_and_licence():
    import re

    text = (PROJECT_ROOT / "deploy" / "Dockerfile").read_text()
    assert re.search(r"^ARG VERSION=(\S+)$", text, re.M).group(1) == __version__
    labels = dict(re.findall(r'(org\.opencontainers\.image\.[a-z.]+)="([^"]*)"', text))
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert labels["org.opencontainers.image.licenses"] == "MIT"
    for key in ("title", "description", "revision", "authors", "url", "source", "documentation", "base.name"):
        assert labels[f"org.opencontainers.image.{key}"], key
    base = re.search(r"^FROM (\S+)", text, re.M).group(1)
    assert labels["org.opencontainers.image.base.name"].endswith(base)


def test_the_installed_package_carries_the_broker_files_and_the_samples(installed):
    _, site = installed
    assert (site / "stream" / "devtools" / "kafka" / "pom.xml").is_file()
    assert (site / "stream" / "devtools" / "kafka" / "log4j2.properties").is_file()
    traces = site / "stream" / "samples" / "traces"
    assert len(list(traces.rglob("*.json"))) == 21  # 20 mini-swe-agent runs + 1 tau-bench file (10 runs)
    assert not (site / "var").exists()


def test_the_installed_command_ingests_the_packaged_samples_from_anywhere(installed, tmp_path):
    _, site = installed
    done = run_installed(site, tmp_path, "ingest", "--out", "events.jsonl")
    assert done.returncode == 0, done.stderr
    assert "ingest: 30 contexts" in done.stderr
    assert (tmp_path / "events.jsonl").stat().st_size > 1_000_000


def test_the_installed_command_keeps_its_state_in_the_users_own_directories(installed, tmp_path):
    _, site = installed
    probe = ("from stream.settings import Settings; from stream.devtools import kafka_local as k; s = Settings(); "
             "print(s.data_dir, s.kafka_home, s.kafka_cache, k.POM_FILE, sep='\\n')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env.update(PYTHONPATH=str(site), XDG_DATA_HOME=str(tmp_path / "data"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out[:3] == [str(tmp_path / "data" / "checkpoint-guard" / "worker"),
                       str(tmp_path / "data" / "checkpoint-guard" / "kafka"),
                       str(tmp_path / "cache" / "checkpoint-guard" / "kafka")]
    assert out[3] == str(site / "stream" / "devtools" / "kafka" / "pom.xml")
