"""The Helm chart (deploy/helm/checkpoint-guard) renders valid Kubernetes manifests.

Rendered offline by the real ``helm template`` (built by ``make tools``; ``HELM_BIN``
names it) and validated by ``kubernetes-validate --strict`` against the schemas of a
current Kubernetes release. The behaviour the chart promises (a volume per worker, the
pod's own address as canonical URL, probes, a non-root read-only container, secrets by
reference only, every topic the workers use, least-privilege ACLs) is asserted on the
rendered objects; every bad value is refused with a message naming it (values.schema.json,
or a template ``fail`` where two values must agree).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stream.kafka_clients import leader_topic, project_topics, state_topic
from stream.remediation import state_topic as remediation_state_topic
from stream.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.unit

CHART = PROJECT_ROOT / "deploy" / "helm" / "checkpoint-guard"
#: The Kubernetes release the manifests are validated against (kubernetes-validate bundles its schemas).
KUBE_VERSION = "1.37.0"
EVERYTHING = ["remediation.enabled=true", "strimzi.user.enabled=true",
              "monitoring.serviceMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
              "monitoring.dashboard.enabled=true", "kafka.securityProtocol=SASL_SSL", "kafka.sasl.username=guard",
              "kafka.sasl.passwordSecret.name=guard-user", "kafka.tls.caSecret.name=my-cluster-cluster-ca-cert",
              "kafka.tls.clientSecret.name=guard-user"]
#: Good values that change what renders (each must lint and validate).
GOOD = {
    "defaults": (),
    "everything-on": tuple(EVERYTHING),
    "strimzi-topics-and-user": ("strimzi.topics.enabled=true", *EVERYTHING),
    "pod-monitor-no-persistence-hard-anti-affinity": (
        "monitoring.podMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
        "worker.persistence.enabled=false", "worker.podAntiAffinity=hard", "worker.replicas=4",
        "config.CG_SEQ_GAP_LIMIT=500"),
    "tls-user-no-create-rights": (
        "kafka.securityProtocol=SSL", "strimzi.user.enabled=true", "strimzi.user.authentication=tls",
        "kafka.tls.caSecret.name=ca", "worker.createTopics=false", "worker.podAntiAffinity=none"),
}
DEFAULTS = {name: f.default for name, f in Settings.model_fields.items()}


def helm() -> str:
    found = os.environ.get("HELM_BIN") or shutil.which("helm")
    if not found or not Path(found).exists():
        pytest.fail("helm is not installed: run `make tools` (builds it into ~/.cache/checkpoint-guard/tools), "
                    "or set HELM_BIN")
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
    return subprocess.run([tool, "--strict", "-k", KUBE_VERSION, str(path)],
                          capture_output=True, text=True, timeout=300)


def test_helm_lint_strict_passes():
    done = subprocess.run([helm(), "lint", "--strict", str(CHART)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


@pytest.mark.parametrize("sets", list(GOOD.values()), ids=list(GOOD))
def test_good_values_pass_helm_lint_strict(sets):
    args = [helm(), "lint", "--strict", str(CHART)]
    for one_set in sets:
        args += ["--set", one_set]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("sets", list(GOOD.values()), ids=list(GOOD))
def test_rendered_manifests_are_valid_for_a_current_kubernetes(tmp_path, sets):
    out = tmp_path / "manifests.yaml"
    out.write_text(render(*sets).stdout)
    done = validate(out)
    assert done.returncode == 0, done.stdout + done.stderr
    core = [d for d in yaml.safe_load_all(out.read_text()) if d and "monitoring.coreos.com" not in d["apiVersion"]
            and "strimzi" not in d["apiVersion"]]
    assert done.stdout.count("passed for resource") == len(core) >= 5


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


def test_the_topics_job_and_the_strimzi_topics_cover_every_topic_the_workers_use():
    job = one(objects(), "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["checkpoint-guard", "topics", "create"]
    s = Settings()
    used = [t for group in project_topics(s) for t in group] + [state_topic(s), leader_topic(s)]
    docs = objects("strimzi.topics.enabled=true")
    assert not [d for d in docs if d["kind"] == "Job"]  # the KafkaTopics declare them: no Job
    topics = {t["spec"]["topicName"]: t for t in docs if t["kind"] == "KafkaTopic"}
    assert sorted(topics) == sorted(used)
    with_remediation = [d["spec"]["topicName"]
                        for d in objects("strimzi.topics.enabled=true", "remediation.enabled=true")
                        if d["kind"] == "KafkaTopic"]
    assert sorted(with_remediation) == sorted(used + [remediation_state_topic(s)])
    for name, t in topics.items():
        assert t["metadata"]["labels"]["strimzi.io/cluster"] == "my-cluster"
        assert t["spec"]["partitions"] == (1 if name == leader_topic(s) else 4)
        assert t["spec"]["config"]["max.message.bytes"] == s.max_request_bytes
        assert (t["spec"]["config"].get("cleanup.policy") == "compact") == (name == DEFAULTS["status_topic"])
    assert topics[state_topic(s)]["spec"]["config"]["retention.ms"] == -1  # what ensure_state_topic sets
    env = {e["name"]: e["value"] for e in one(docs, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]["env"]
           if "value" in e}
    assert env["CG_CREATE_TOPICS"] == "false"  # every topic is declared: the workers need no create rights
    container = one(objects(), "StatefulSet")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["CG_CREATE_TOPICS"] == "true"


def _acls(*sets: str) -> dict[tuple[str, str, str], set[str]]:
    user = one(objects("kafka.securityProtocol=SASL_SSL", "strimzi.user.enabled=true", *sets), "KafkaUser")
    return {(a["resource"]["type"], a["resource"]["name"], a["resource"]["patternType"]): set(a["operations"])
            for a in user["spec"]["authorization"]["acls"]}


def test_the_kafka_user_gets_least_privilege_acls_and_create_only_where_it_creates():
    s = Settings()
    acls = _acls("strimzi.topics.enabled=true")
    for topic in s.input_topics:
        assert acls[("topic", topic, "literal")] == {"Read", "Describe"}
    for topic in s.output_topics:
        assert acls[("topic", topic, "literal")] == {"Write", "Describe", "DescribeConfigs"}
    assert acls[("topic", state_topic(s), "literal")] == {"Read", "Write", "Describe", "Delete"}
    assert acls[("group", s.app_id, "literal")] == {"Read", "Describe"}
    assert not any("Create" in ops for ops in acls.values())  # Strimzi declares every topic
    assert not any(kind == "cluster" or ops & {"All", "Alter", "AlterConfigs"} for (kind, _, _), ops in acls.items())
    with_job = _acls()  # the topics Job runs as this user: create rights for exactly its topics
    created = {name for (kind, name, _), ops in with_job.items() if "Create" in ops}
    assert created == {*(t for g in project_topics(s) for t in g), state_topic(s), leader_topic(s), f"{s.app_id}-"}
    remediation = _acls("strimzi.topics.enabled=true", "remediation.enabled=true")
    assert remediation[("transactionalId", f"{s.remediation_group}-tx", "literal")] == {"Write", "Describe"}
    assert remediation[("topic", remediation_state_topic(s), "literal")] == {"Read", "Write", "Describe"}
    user = one(objects("kafka.securityProtocol=SASL_SSL", "strimzi.user.enabled=true"), "StatefulSet")
    env = {e["name"]: e for e in user["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["CG_SASL_USERNAME"]["value"] == "cg-checkpoint-guard"  # the KafkaUser, and its Secret
    assert env["CG_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "cg-checkpoint-guard", "key": "password"}


def test_persistence_disabled_is_an_empty_dir_and_enabled_a_claim_per_pod():
    sts = one(objects("worker.persistence.enabled=false"), "StatefulSet")
    assert "volumeClaimTemplates" not in sts["spec"]
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}
    mounts = sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "data", "mountPath": "/var/lib/checkpoint-guard"} in mounts
    (claim,) = one(objects(), "StatefulSet")["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"


def test_workers_prefer_other_nodes_by_default():
    def affinity(*sets: str) -> dict | None:
        return one(objects(*sets), "StatefulSet")["spec"]["template"]["spec"].get("affinity")

    labels = one(objects(), "StatefulSet")["spec"]["template"]["metadata"]["labels"]
    (soft,) = affinity()["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert soft["weight"] == 100 and soft["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert soft["podAffinityTerm"]["labelSelector"]["matchLabels"] == labels
    anti = affinity("worker.podAntiAffinity=hard")["podAntiAffinity"]
    (hard,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert hard["labelSelector"]["matchLabels"] == labels
    assert affinity("worker.podAntiAffinity=none") is None
    own = affinity("worker.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                   ".matchExpressions[0].key=pool", "worker.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
                   "Execution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists")
    assert list(own) == ["nodeAffinity"]  # the user's own affinity replaces the default


#: (--set, the phrase helm's error must contain): values.schema.json names the value's path; a
#: template `fail` names the values that disagree.
BAD = [
    ("kafka.securityProtocol=BOGUS", "at '/kafka/securityProtocol': value must be one of 'PLAINTEXT'"),
    ("kafka.sasl.mechanism=MD5", "at '/kafka/sasl/mechanism': value must be one of"),
    ("config.CG_PARTITIONS=abc", "at '/config/CG_PARTITIONS': 'abc' does not match pattern"),
    ("config.CG_PARTITIONS=0", "at '/config/CG_PARTITIONS': minimum: got 0, want 1"),
    ("config.CG_PARTITONS=4", "at '/config': additional properties 'CG_PARTITONS' not allowed"),
    ("config.CG_BROKER=kafka://elsewhere:9092", "at '/config': additional properties 'CG_BROKER' not allowed"),
    ("config.CG_LOG_FORMAT=xml", "at '/config/CG_LOG_FORMAT': value must be one of 'text', 'json'"),
    ("config.CG_COMMIT_INTERVAL=fast", "at '/config/CG_COMMIT_INTERVAL'"),
    ("config.CG_SEQ_GAP_LIMIT=-5", "at '/config/CG_SEQ_GAP_LIMIT': minimum: got -5, want 0"),
    ("config.CG_APP_ID=two words", "at '/config/CG_APP_ID'"),
    ("kafka.bootstrapServers=no-port", "at '/kafka/bootstrapServers'"),
    ("worker.replicas=0", "at '/worker/replicas': minimum: got 0, want 1"),
    ("worker.podAntiAffinity=maybe", "at '/worker/podAntiAffinity': value must be one of 'soft', 'hard', 'none'"),
    ("worker.persistence.size=lots", "at '/worker/persistence/size'"),
    ("worker.webPort=70000", "at '/worker/webPort': maximum: got 70,000, want 65,535"),
    ("topics.alerts=bad topic", "at '/topics/alerts'"),
    ("strimzi.user.authentication=kerberos", "at '/strimzi/user/authentication'"),
    ("monitoring.serviceMonitor.interval=often", "at '/monitoring/serviceMonitor/interval'"),
    ("bogusTopLevel=1", "additional properties 'bogusTopLevel' not allowed"),
    ("worker.replicas=9", "worker.replicas=9 is more than config.CG_PARTITIONS=4: at most 4 workers get partitions"),
    ("config.CG_PARTITIONS=1", "worker.replicas=2 is more than config.CG_PARTITIONS=1"),
    ("monitoring.podMonitor.enabled=true,monitoring.serviceMonitor.enabled=true", "would scrape every worker twice"),
    ("strimzi.user.enabled=true", "strimzi.user.authentication=scram-sha-512 needs kafka.securityProtocol=SASL_SSL"),
    ("strimzi.user.enabled=true,strimzi.user.authentication=tls", "strimzi.user.authentication=tls needs "
                                                                   "kafka.securityProtocol=SSL, not PLAINTEXT"),
    ("kafka.securityProtocol=SASL_SSL", "kafka.sasl.username is required with SASL"),
]


@pytest.mark.parametrize("bad, says", BAD, ids=[b for b, _ in BAD])
def test_helm_template_refuses_a_bad_value_with_a_message_naming_it(bad, says):
    failed = render(bad, check=False)
    assert failed.returncode != 0 and failed.stdout == "", bad
    assert says in failed.stderr, failed.stderr


def test_the_prometheus_rule_is_the_rules_file_with_the_releases_job_selector():
    from deploy.generate import DEFAULT_SELECTOR, render_rules

    def rules(*sets: str) -> dict:
        return one(objects("monitoring.prometheusRule.enabled=true", *sets), "PrometheusRule")["spec"]

    expected = lambda selector: {"groups": yaml.safe_load(render_rules(selector))["groups"]}  # noqa: E731
    assert rules() == expected(DEFAULT_SELECTOR)
    assert rules("monitoring.serviceMonitor.enabled=true") == expected('job="cg-checkpoint-guard", namespace="guard"')
    assert rules("monitoring.podMonitor.enabled=true") == expected('job="guard/cg-checkpoint-guard"')
    assert rules("monitoring.prometheusRule.selector=job=\"x\"") == expected('job="x"')
    labelled = one(objects("monitoring.prometheusRule.enabled=true", "monitoring.prometheusRule.labels.release=kps"),
                   "PrometheusRule")
    assert labelled["metadata"]["labels"]["release"] == "kps"
    # the ServiceMonitor selects the Service whose name is that job, not the headless one too
    docs = objects("monitoring.serviceMonitor.enabled=true")
    match = one(docs, "ServiceMonitor")["spec"]["selector"]["matchLabels"]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Service"
            and match.items() <= d["metadata"]["labels"].items()] == ["cg-checkpoint-guard"]


def test_the_dashboard_config_map_carries_the_dashboard_for_grafanas_sidecar():
    cm = one(objects("monitoring.dashboard.enabled=true"), "ConfigMap")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = PROJECT_ROOT / "deploy" / "grafana" / "dashboards" / "checkpoint-guard.json"
    assert json.loads(cm["data"]["checkpoint-guard.json"]) == json.loads(dashboard.read_text())
    assert not [d for d in objects() if d["kind"] in ("ConfigMap", "PrometheusRule")]  # both behind values


def test_notes_point_at_urls_not_at_repository_paths():
    done = subprocess.run([helm(), "install", "cg", str(CHART), "--dry-run=client", "--namespace", "guard"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    notes = done.stdout.split("NOTES:", 1)[1]
    assert "kubectl -n guard port-forward svc/cg-checkpoint-guard 6066" in notes
    for word in notes.split():
        if "docs/" in word or "deploy/" in word or word.endswith((".md", ".yml", ".yaml")):
            assert word.startswith("https://"), word


def test_the_chart_readme_documents_every_value_group():
    readme = (CHART / "README.md").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for key, value in values.items():
        assert f"`{key}" in readme, key
        if key in ("image", "kafka", "strimzi", "worker", "remediation", "monitoring", "serviceAccount"):
            for sub in value:
                assert f"`{key}.{sub}" in readme, f"{key}.{sub}"


def test_monitoring_and_remediation_are_optional_and_select_the_workers():
    kinds = {d["kind"] for d in objects()}
    assert {"StatefulSet", "Service", "PodDisruptionBudget", "Job"} <= kinds
    assert not kinds & {"ServiceMonitor", "PodMonitor", "Deployment", "KafkaTopic", "KafkaUser"}
    docs = objects(*EVERYTHING)
    sts = one(docs, "StatefulSet")
    labels = sts["spec"]["template"]["metadata"]["labels"]
    pod_monitor = one(objects("monitoring.podMonitor.enabled=true"), "PodMonitor")["spec"]["selector"]["matchLabels"]
    assert pod_monitor.items() <= labels.items()
    for kind in ("ServiceMonitor", "PodDisruptionBudget"):
        selector = one(docs, kind)["spec"]["selector"]["matchLabels"]
        assert selector.items() <= labels.items(), kind
    assert "checkpoint-guard" in one(docs, "ServiceMonitor")["metadata"]["name"]  # the alert rules' job name
    remediate = one(docs, "Deployment")
    assert remediate["spec"]["replicas"] == 1 and remediate["spec"]["strategy"]["type"] == "Recreate"
    assert remediate["spec"]["template"]["spec"]["containers"][0]["command"] == ["checkpoint-guard", "remediate"]
