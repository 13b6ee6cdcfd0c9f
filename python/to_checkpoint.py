"""to_checkpoint.py: a PyTorch state dict back to an attnscope checkpoint.

    python3 python/to_checkpoint.py STATE_DICT RUN OUT [--step N]

STATE_DICT is a file torch.save wrote of a state dict with attnscope's names
(the model attnscope_torch.load makes: model.state_dict()). RUN is the run
the model came from, its directory or one of its checkpoints: its run config
(the model's shape, the task, the vocabulary) goes into OUT, and its step
unless --step gives another. OUT is the checkpoint written, which
`go run ./cmd/inspect OUT` and `go run ./cmd/sample OUT` open. A run's own
checkpoint.safetensors and best.safetensors are never overwritten: -resume
checks them against the optimizer state.
"""

import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnscope_torch  # noqa: E402  (after the path above)

RUN_FILES = ("checkpoint.safetensors", "best.safetensors")
MAX_HEADER = 100 << 20  # bytes; the largest header attnscope reads


def read_metadata(path):
    """The metadata of the safetensors file at path, from its header alone."""
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) != 8:
            raise ValueError("%s: not a safetensors file (shorter than 8 bytes)" % path)
        (n,) = struct.unpack("<Q", prefix)
        if n > MAX_HEADER:
            raise ValueError("%s: not a safetensors file (a header of %d bytes)" % (path, n))
        header = json.loads(f.read(n))
    return header.get("__metadata__", {})


def run_checkpoint(run):
    """The checkpoint of RUN: the file itself, or a run directory's."""
    if os.path.isdir(run):
        path = os.path.join(run, "checkpoint.safetensors")
        if not os.path.isfile(path):
            raise ValueError("%s holds no checkpoint.safetensors: RUN is a run directory or a checkpoint" % run)
        return path
    return run


def source_run(run):
    """The run config (a dict) and the step of RUN's checkpoint."""
    path = run_checkpoint(run)
    metadata = read_metadata(path)
    if metadata.get("format") != attnscope_torch.CHECKPOINT_FORMAT:
        raise ValueError("%s: not an attnscope checkpoint (metadata format %r, want %r)"
                         % (path, metadata.get("format"), attnscope_torch.CHECKPOINT_FORMAT))
    if "config" not in metadata or "step" not in metadata:
        raise ValueError("%s: an attnscope checkpoint without its run config or step" % path)
    return json.loads(metadata["config"]), int(metadata["step"])


def check_out(out):
    """Refuses an OUT that is a run's own checkpoint."""
    directory = os.path.dirname(os.path.abspath(out))
    if os.path.basename(out) in RUN_FILES and os.path.exists(os.path.join(directory, "config.yaml")):
        raise ValueError("OUT %s is a run's own %s, which -resume checks against its optimizer state; "
                         "write another file" % (out, os.path.basename(out)))


def read_state_dict(path):
    """The state dict torch.save wrote at path, loaded without running
    pickled code."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or not all(torch.is_tensor(v) for v in state.values()):
        raise ValueError("%s holds no state dict (a dict of names to tensors, as model.state_dict() gives)" % path)
    return state


def main(argv):
    parser = argparse.ArgumentParser(prog="to_checkpoint.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("state_dict", metavar="STATE_DICT", help="a state dict torch.save wrote, with attnscope's names")
    parser.add_argument("run", metavar="RUN", help="the run the model came from: its directory or a checkpoint")
    parser.add_argument("out", metavar="OUT", help="the checkpoint to write (.safetensors)")
    parser.add_argument("--step", type=int, help="the step to record (default: RUN's checkpoint's)")
    args = parser.parse_args(argv)
    try:
        check_out(args.out)
        config, step = source_run(args.run)
        if args.step is not None:
            if args.step < 0:
                raise ValueError("--step %d: must be 0 or more" % args.step)
            step = args.step
        attnscope_torch.save(read_state_dict(args.state_dict), args.out, config, step)
    except (OSError, ValueError, KeyError, RuntimeError, EOFError) as e:
        print("to_checkpoint.py: %s" % " ".join(str(e).split()), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
