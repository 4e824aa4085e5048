#!/usr/bin/env bash
# The service on an ARM CPU, emulated: what text a machine that is not x86 writes (the words
# a model writes differ by CPU kind, so a result names the kind it was measured on).
#
#   sudo bench/arm64.sh CPU COMMAND...      e.g.
#   sudo bench/arm64.sh neoverse-n1 .venv/bin/python -m bench.accuracy --runs 1 --only "tiny.en [en]"
#   sudo TRANSCRIBER_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/arm \
#        bench/arm64.sh cortex-a72 .venv/bin/transcriber transcribe transcriber/samples/hello.ogg
#
# CPU is a model QEMU knows (`qemu-aarch64-static -cpu help`): cortex-a72 (a Raspberry Pi 4: no
# int8 dot product), neoverse-n1 (a Graviton 2: with it), ... COMMAND runs in a clone of this
# checkout's HEAD inside a Debian arm64 root (made once under $ARM_ROOT, default
# /opt/transcriber-arm64) through QEMU's user-mode emulation, which computes each instruction as
# the CPU named would: the words are that CPU's; the speed is not (about 100 times slower).
#
# Needs root (binfmt_misc, chroot, bind mounts) and Debian's package archive and the package
# index. pgserver and pocketsphinx have no arm64 wheels: a command that needs a database gets
# TRANSCRIBER_DATABASE_URL (the host's PostgreSQL), and the pocketsphinx engine is absent.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 5,8p "$0"; exit 2; }
cpu=$1; shift
here=$(cd "$(dirname "$0")/.." && pwd)
root=${ARM_ROOT:-/opt/transcriber-arm64}

# user-mode emulation: the kernel hands arm64 programs to QEMU
command -v qemu-aarch64-static >/dev/null || apt-get install -y -qq qemu-user-static binfmt-support debootstrap
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64

if [ ! -x "$root/usr/bin/python3" ]; then
    debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates,libgomp1 \
        bookworm "$root" http://deb.debian.org/debian
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"  # the host's own trust, proxies included
for fs in proc dev sys; do mountpoint -q "$root/$fs" || mount --bind "/$fs" "$root/$fs"; done

# The CPU as the programs read it. The host's /proc/cpuinfo describes an x86 CPU, and
# onnxruntime's CPU probe crashes on it; its features must also be the emulated CPU's.
case $cpu in
    cortex-a72) part=0xd08; features="fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid" ;;
    cortex-a76) part=0xd0b; features="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp" ;;
    neoverse-n1) part=0xd0c; features="fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs" ;;
    *) echo "no /proc/cpuinfo written here for $cpu: use cortex-a72, cortex-a76 or neoverse-n1" >&2; exit 2 ;;
esac
cpuinfo=$root/tmp/cpuinfo-$cpu
: > "$cpuinfo"
for n in 0 1; do
    printf 'processor\t: %s\nFeatures\t: %s\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: %s\nCPU revision\t: 0\n\n' \
        "$n" "$features" "$part" >> "$cpuinfo"
done
mountpoint -q "$root/proc/cpuinfo" && umount "$root/proc/cpuinfo"
mount --bind "$cpuinfo" "$root/proc/cpuinfo"

# this checkout's HEAD, installed once per commit (the benchmark's data comes along if fetched)
rm -rf "$root/root/transcriber.new"
git clone -q "$here" "$root/root/transcriber.new"
if [ "$(git -C "$root/root/transcriber.new" rev-parse HEAD)" != "$(git -C "$root/root/transcriber" rev-parse HEAD 2>/dev/null)" ]; then
    rm -rf "$root/root/transcriber"
    mv "$root/root/transcriber.new" "$root/root/transcriber"
    chroot "$root" /bin/bash -c 'cd /root/transcriber && python3 -m venv .venv && .venv/bin/python - <<EOF
import configparser, subprocess
cfg = configparser.ConfigParser()
cfg.read("setup.cfg")
wanted = [line for section in (cfg["options"]["install_requires"], cfg["options.extras_require"]["base"],
                               cfg["options.extras_require"]["speakers"])
          for line in section.split("\n") if line and not line.startswith(("pgserver", "pocketsphinx"))]
subprocess.run([".venv/bin/pip", "install", "-q", "--only-binary=:all:", "psutil", *wanted], check=True)
subprocess.run([".venv/bin/pip", "install", "-q", "--no-deps", "-e", "."], check=True)
EOF'
fi
rm -rf "$root/root/transcriber.new"
[ -d "$HOME/.cache/transcriber-bench" ] && mkdir -p "$root/root/.cache" && cp -ru "$HOME/.cache/transcriber-bench" "$root/root/.cache/"

quoted=$(printf '%q ' "$@")
exec chroot "$root" /usr/bin/env HOME=/root QEMU_CPU="$cpu" \
    ${TRANSCRIBER_DATABASE_URL:+TRANSCRIBER_DATABASE_URL="$TRANSCRIBER_DATABASE_URL"} \
    /bin/bash -c "cd /root/transcriber && $quoted"
