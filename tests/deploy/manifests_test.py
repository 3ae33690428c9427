"""The Kubernetes manifests of deploy/kubernetes/ as a cluster would take them: each file parses,
every Deployment's pods run as a non-root user on a read-only root filesystem without
capabilities, images are not pulled when present (kind load), probes read /live and /ready,
workers run as many engine threads as the CPUs they request, and every flag they pass is one
the program takes (its --help).

Usage: manifests_test.py STAMEN STAMEN_GATEWAY MANIFEST_FOLDER
"""
import pathlib
import subprocess
import sys

import yaml


def help_text(program, *command):
    return subprocess.run([program, *command, "--help"], capture_output=True, text=True, check=True).stdout


def check_flags(args, help_page, where):
    for argument in args:
        if argument.startswith("--"):
            flag = argument.split("=", 1)[0]
            assert flag + " " in help_page or flag + "," in help_page, f"{where}: {flag} is not in --help"


def check_container(container, pod, where, stamen, gateway_program):
    assert container.get("imagePullPolicy") == "IfNotPresent", f"{where}: imagePullPolicy"
    security = container.get("securityContext", {})
    assert security.get("readOnlyRootFilesystem") is True, f"{where}: readOnlyRootFilesystem"
    assert security.get("allowPrivilegeEscalation") is False, f"{where}: allowPrivilegeEscalation"
    assert security.get("capabilities", {}).get("drop") == ["ALL"], f"{where}: capabilities"
    assert pod.get("securityContext", {}).get("runAsNonRoot") is True, f"{where}: runAsNonRoot"
    requests = container.get("resources", {}).get("requests", {})
    assert "cpu" in requests and "memory" in requests, f"{where}: resource requests"
    assert container["livenessProbe"]["httpGet"]["path"] == "/live", f"{where}: livenessProbe"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready", f"{where}: readinessProbe"
    mounts = {mount["mountPath"] for mount in container.get("volumeMounts", [])}
    home = {env["name"]: env.get("value") for env in container.get("env", [])}.get("HF_HOME")
    assert home in mounts, f"{where}: HF_HOME {home} is not a mounted volume (the root filesystem is read-only)"
    args = container.get("args", [])
    if container.get("command") == ["stamen-gateway"]:
        check_flags(args, help_text(gateway_program), where)
        return
    assert args[0] == "worker", f"{where}: expected a worker, got {args[:1]}"
    check_flags(args[1:], help_text(stamen, "worker"), where)
    threads = args[args.index("--threads") + 1] if "--threads" in args else None
    assert threads == str(requests["cpu"]), f"{where}: --threads {threads} but {requests['cpu']} CPUs requested"
    startup = container.get("startupProbe", {})
    assert startup.get("httpGet", {}).get("path") == "/live", f"{where}: a startupProbe covers the model's pull"


def main():
    stamen, gateway_program, folder = sys.argv[1:4]
    manifests = sorted(pathlib.Path(folder).glob("*.yaml"))
    assert manifests, f"no manifest in {folder}"
    containers = 0
    for path in manifests:
        for document in yaml.safe_load_all(path.read_text()):
            if not document or document.get("kind") != "Deployment":
                continue
            pod = document["spec"]["template"]["spec"]
            for container in pod["containers"]:
                where = f"{path.name}: {document['metadata']['name']}/{container['name']}"
                check_container(container, pod, where, stamen, gateway_program)
                containers += 1
    print(f"{containers} containers in {len(manifests)} manifests checked")


if __name__ == "__main__":
    main()
