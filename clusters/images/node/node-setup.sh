#!/usr/bin/env bash
# Runs inside the node image build (stage 1): kind's base-image Dockerfile
# steps, adapted to a debootstrapped Debian bookworm (its containerd 1.6 and
# CNI plugin paths) and to hosts without CAP_SYS_RESOURCE.
set -euxo pipefail
k8s_version="$1"
pause_image="$2" # the sandbox image this version's kubeadm wants

chmod 0755 /usr/local/bin/* /kind/bin /kind/bin/* /usr/bin/kubelet /usr/bin/kubeadm /usr/bin/kubectl
find /etc/systemd /etc/containerd /etc/default /etc/sysctl.d /kind -type f -exec chmod 0644 {} +
chmod 0755 /kind/bin/*

# systemd in a container: only what kind enables.
find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
  /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
  /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>/etc/systemd/journald.conf
ln -sf "$(command -v systemd || echo /lib/systemd/systemd)" /sbin/init
systemctl enable kubelet.service containerd.service undo-mount-hacks.service
systemctl mask systemd-binfmt.service
mkdir -p /etc/kubernetes/manifests

# Debian ships containerd in /usr/bin and CNI plugins in /usr/lib/cni; kind's
# units and kubelet look in /usr/local/bin and /opt/cni/bin.
for b in containerd ctr containerd-shim containerd-shim-runc-v2; do
  [ -e "/usr/bin/$b" ] && ln -sf "/usr/bin/$b" "/usr/local/bin/$b"
done
mkdir -p /opt/cni/bin
for f in /usr/lib/cni/*; do ln -sf "$f" "/opt/cni/bin/$(basename "$f")"; done

# The CRI asks for oom_score_adj -998 for sandboxes, which needs
# CAP_SYS_RESOURCE; without this every pod sandbox fails on hosts that lack it.
sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml
grep -q 'restrict_oom_score_adj = true' /etc/containerd/config.toml
# kind's config names one fixed sandbox image; use the one kubeadm of this
# version preloads (its PauseVersion), so a missing tag never means a pull.
sed -i "s#^\([[:space:]]*sandbox_image = \).*#\1\"$pause_image\"#" /etc/containerd/config.toml
grep -qF "sandbox_image = \"$pause_image\"" /etc/containerd/config.toml

# kind's base image generates the runtime base spec with ctr.
ctr oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' >/etc/containerd/cri-base.json

echo "$k8s_version" >/kind/version
kubeadm version -o short
containerd --version
