"""The Helm chart (deploy/helm/checkpoint-guard) renders valid Kubernetes manifests.

Rendered offline by the real ``helm template`` (built by ``make tools``; ``HELM_BIN``
names it) and validated by ``kubernetes-validate --strict`` against the schemas of a
current Kubernetes release. The behaviour the chart promises (a volume per worker, the
pod's own address as canonical URL, probes, a non-root read-only container, secrets by
reference only, the 7 topics) is asserted on the rendered objects.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stream.kafka_clients import project_topics
from stream.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.unit

CHART = PROJECT_ROOT / "deploy" / "helm" / "checkpoint-guard"
#: The Kubernetes release the manifests are validated against (kubernetes-validate bundles its schemas).
KUBE_VERSION = "1.37.0"
EVERYTHING = ["remediation.enabled=true", "topics.strimzi.enabled=true", "monitoring.serviceMonitor.enabled=true",
              "monitoring.podMonitor.enabled=true", "kafka.securityProtocol=SASL_SSL", "kafka.sasl.username=guard",
              "kafka.sasl.passwordSecret.name=guard-user", "kafka.tls.caSecret.name=my-cluster-cluster-ca-cert",
              "kafka.tls.clientSecret.name=guard-user"]
DEFAULTS = {name: f.default for name, f in Settings.model_fields.items()}


def helm() -> str:
    found = os.environ.get("HELM_BIN") or shutil.which("helm")
    if not found or not Path(found).exists():
        pytest.fail("helm is not installed: run `make tools` (builds it into .cache/tools), or set HELM_BIN")
    return found


def render(*sets: str, check: bool = True) -> subprocess.CompletedProcess:
    args = [helm(), "template", "cg", str(CHART), "--namespace", "guard", "--kube-version", KUBE_VERSION]
    for s in sets:
        args += ["--set", s]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def objects(*sets: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(render(*sets).stdout) if d]


def one(docs: list[dict], kind: str) -> dict:
    (found,) = [d for d in docs if d["kind"] == kind]
    return found


def validate(path: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent))
    assert tool, "kubernetes-validate is not installed: make install (test extras)"
    return subprocess.run([tool, "--strict", "-k", KUBE_VERSION, str(path)], capture_output=True, text=True, timeout=300)


def test_helm_lint_strict_passes():
    done = subprocess.run([helm(), "lint", "--strict", str(CHART)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


@pytest.mark.parametrize("sets", [(), tuple(EVERYTHING)], ids=["defaults", "everything-on"])
def test_rendered_manifests_are_valid_for_a_current_kubernetes(tmp_path, sets):
    out = tmp_path / "manifests.yaml"
    out.write_text(render(*sets).stdout)
    done = validate(out)
    assert done.returncode == 0, done.stdout + done.stderr
    core = [d for d in yaml.safe_load_all(out.read_text()) if d and "monitoring.coreos.com" not in d["apiVersion"]
            and "strimzi" not in d["apiVersion"]]
    assert done.stdout.count("passed for resource") == len(core) >= 6


def test_kubernetes_validate_rejects_a_bogus_field(tmp_path):
    docs = objects()
    sts = one(docs, "StatefulSet")
    sts["spec"]["template"]["spec"]["containers"][0]["bogusField"] = True
    out = tmp_path / "bad.yaml"
    out.write_text(yaml.safe_dump_all(docs))
    done = validate(out)
    assert done.returncode != 0 and "bogusField" in done.stdout + done.stderr


def test_the_worker_is_a_statefulset_with_a_volume_per_pod_probes_and_its_own_canonical_url():
    sts = one(objects(), "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    env = {e["name"]: e for e in c["env"]}
    assert c["command"] == ["checkpoint-guard", "worker", "-l", "info"]
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert env["CG_WEB_CANONICAL_URL"]["value"] == f"http://$(POD_IP):{DEFAULTS['web_port']}"
    assert list(env).index("POD_IP") < list(env).index("CG_WEB_CANONICAL_URL")  # $(VAR) needs it defined first
    assert env["CG_WEB_HOST"]["value"] == "0.0.0.0"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["resources"]["requests"] and c["resources"]["limits"]
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert {"name": "data", "mountPath": "/var/lib/checkpoint-guard"} in c["volumeMounts"]
    assert env["CG_DATA_DIR"]["value"].startswith("/var/lib/checkpoint-guard/")
    assert claim["metadata"]["name"] == "data"


def test_pods_run_as_a_numeric_non_root_user_on_a_read_only_root_filesystem():
    for kind in ("StatefulSet", "Deployment", "Job"):
        pod = one(objects(*EVERYTHING), kind)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert isinstance(pod["securityContext"]["runAsUser"], int) and pod["securityContext"]["runAsUser"] > 0
        for c in pod["containers"]:
            assert c["securityContext"]["readOnlyRootFilesystem"] is True
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]


def test_sasl_and_tls_secrets_come_from_secrets_never_from_values():
    docs = objects(*EVERYTHING)
    for kind in ("StatefulSet", "Deployment", "Job"):
        (c,) = one(docs, kind)["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e for e in c["env"]}
        assert env["CG_SASL_PASSWORD"] == {"name": "CG_SASL_PASSWORD", "valueFrom": {
            "secretKeyRef": {"name": "guard-user", "key": "password"}}}
        assert env["CG_SSL_CAFILE"]["value"] == "/etc/checkpoint-guard/kafka-ca/ca.crt"
        assert env["CG_SSL_KEYFILE"]["value"] == "/etc/checkpoint-guard/kafka-client/user.key"
    failed = render("kafka.securityProtocol=SASL_SSL", "kafka.sasl.username=guard", check=False)
    assert failed.returncode != 0 and "kafka.sasl.passwordSecret.name is required" in failed.stderr


def test_every_cg_variable_the_chart_sets_is_a_real_setting():
    known = {f"CG_{name.upper()}" for name in Settings.model_fields}
    for kind in ("StatefulSet", "Deployment", "Job"):
        for c in one(objects(*EVERYTHING), kind)["spec"]["template"]["spec"]["containers"]:
            names = {e["name"] for e in c["env"] if e["name"].startswith("CG_")}
            assert names <= known, sorted(names - known)


def test_the_topics_job_and_the_strimzi_topics_cover_the_seven_topics():
    job = one(objects(), "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["checkpoint-guard", "topics", "create"]
    topics = [d for d in objects("topics.strimzi.enabled=true") if d["kind"] == "KafkaTopic"]
    assert sorted(t["spec"]["topicName"] for t in topics) == sorted(t for group in project_topics(Settings()) for t in group)
    for t in topics:
        assert t["metadata"]["labels"]["strimzi.io/cluster"] == "my-cluster"
        assert t["spec"]["partitions"] == 4 and t["spec"]["config"]["max.message.bytes"] == Settings().max_request_bytes
        compacted = t["spec"]["config"].get("cleanup.policy") == "compact"
        assert compacted == (t["spec"]["topicName"] == DEFAULTS["status_topic"])


def test_monitoring_and_remediation_are_optional_and_select_the_workers():
    kinds = {d["kind"] for d in objects()}
    assert {"StatefulSet", "Service", "PodDisruptionBudget", "Job"} <= kinds
    assert not kinds & {"ServiceMonitor", "PodMonitor", "Deployment", "KafkaTopic"}
    docs = objects(*EVERYTHING)
    sts = one(docs, "StatefulSet")
    labels = sts["spec"]["template"]["metadata"]["labels"]
    for kind in ("ServiceMonitor", "PodMonitor", "PodDisruptionBudget"):
        selector = one(docs, kind)["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items(), kind
    assert "checkpoint-guard" in one(docs, "ServiceMonitor")["metadata"]["name"]  # the alert rules' job name
    remediate = one(docs, "Deployment")
    assert remediate["spec"]["replicas"] == 1 and remediate["spec"]["strategy"]["type"] == "Recreate"
    assert remediate["spec"]["template"]["spec"]["containers"][0]["command"] == ["checkpoint-guard", "remediate"]
