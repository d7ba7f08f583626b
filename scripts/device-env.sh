# Sourced by the scripts/device-*.sh that run on a lent GPU machine: the repository root as the working
# folder, the machine's safety rule, and where the binaries and logs are, exported so that a device
# script that runs another passes them on.
cd "$(dirname "$0")/.."
# ../shared/DEVICE.md's rule: NVLink multicast can take a shared host's GPUs out of service.
export NCCL_NVLS_ENABLE=0
export MGJOIN_BIN=${MGJOIN_BIN:-.devbin} OUT=${OUT:-out}
B=$MGJOIN_BIN
mkdir -p "$OUT"
