"""Sharded optimizer state (ZeRO stage 1, issue 26) beside PyTorch's
ZeroRedundancyOptimizer, in one run: an MLP (784 -> H -> H -> 10) trained
with Adam on a global batch split over N processes on TCP loopback.
Doppio: Parallelize_CPU(..., shard_optimizer_state=False / True) under
tools/launch.py; PyTorch: DistributedDataParallel over gloo with
torch.optim.Adam / ZeroRedundancyOptimizer(Adam). Reports the optimizer
state each process holds (the largest over the ranks, bytes) and the median
step time (the slowest rank's), and the ratios: sharded / unsharded memory,
and PyTorch time / ours.

    tools/bench/zero_bench.sh [--nprocs N] [--hidden H] [--iters K] [--out FILE]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rank_helpers  # noqa: E402

WARMUP = 3


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nprocs", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--out", help="also write the results as JSON here")
    parser.add_argument("--worker", help="(internal) run as a Doppio rank; result prefix")
    parser.add_argument("--shard", type=int, default=0, help="(internal)")
    return parser.parse_args()


def doppio_worker(args):
    from doppio import data_parallel_model, distributed, model_helper, optimizer, workspace
    rank, world = distributed.rank(), distributed.world_size()
    distributed.store_handler_from_env()
    model = model_helper.ModelHelper(name='zero_bench')
    data_parallel_model.Parallelize_CPU(
        model, input_builder_fun=lambda m: None,
        forward_pass_builder_fun=rank_helpers.doppio_mlp(args.hidden),
        optimizer_builder_fun=lambda m: optimizer.build_adam(m, 1e-3), devices=[0],
        rendezvous=dict(kv_handler='store_handler', shard_id=rank, num_shards=world,
                        interface='lo', timeout_ms=60000),
        shard_optimizer_state=bool(args.shard), num_threads_per_device=1)
    data_parallel_model.RunInitNet(model)
    step_s = rank_helpers.doppio_step_seconds(model, rank, world, args.iters, WARMUP)
    state = sum(workspace.FetchBlob(b).nbytes
                for b in (str(b) for b in data_parallel_model.GetCheckpointParams(model))
                if b.startswith('cpu_0/') and '_moment' in b)
    rank_helpers.write_report(args.worker, rank, dict(
        state_bytes=state, step_ms=1e3 * step_s))
    data_parallel_model.Synchronize(model)


def run_ours(args, shard):
    ranks, _ = rank_helpers.launch_doppio(__file__, args.nprocs, [
        '--shard', str(shard), '--hidden', str(args.hidden), '--iters', str(args.iters)])
    return dict(state_bytes=max(r['state_bytes'] for r in ranks),
                step_ms=max(r['step_ms'] for r in ranks))


def torch_rank(rank, world, init_file, results, hidden, iters, shard):
    import torch
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method='file://' + init_file, rank=rank,
                            world_size=world)
    model = DistributedDataParallel(rank_helpers.torch_mlp(hidden))
    if shard:
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                      lr=1e-3)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step_s = rank_helpers.torch_step_seconds(model, opt, rank, world, iters, WARMUP)
    state = 0
    for per_param in opt.optim.state.values() if shard else opt.state.values():
        for value in per_param.values():
            if torch.is_tensor(value) and value.numel() > 1:
                state += value.numel() * value.element_size()
    dist.destroy_process_group()
    rank_helpers.put_and_flush(results, dict(rank=rank, state_bytes=state, step_ms=1e3 * step_s))


def run_torch(args, shard):
    reports = rank_helpers.spawn_torch(torch_rank, args.nprocs,
                                       (args.hidden, args.iters, shard))
    return dict(state_bytes=max(r['state_bytes'] for r in reports),
                step_ms=max(r['step_ms'] for r in reports))


def main():
    args = parse_args()
    if args.worker:
        return doppio_worker(args)
    from machine import describe
    rows = {}
    for name, shard in (('unsharded', 0), ('sharded', 1)):
        rows[name] = dict(ours=run_ours(args, shard), torch=run_torch(args, shard))
    print('zero_bench: %s' % describe())
    print('Adam on an MLP 784-%d-%d-10, global batch %d over %d processes, %d steps'
          % (args.hidden, args.hidden, rank_helpers.BATCH, args.nprocs, args.iters))
    print('| run | optimizer state per process (MiB) | step ms | PyTorch state (MiB) | '
          'PyTorch step ms | PyTorch time / ours |')
    print('|---|---:|---:|---:|---:|---:|')
    for name, row in rows.items():
        ours, torch = row['ours'], row['torch']
        print('| %s | %.2f | %.2f | %.2f | %.2f | %.2fx |' % (
            name, ours['state_bytes'] / 2**20, ours['step_ms'], torch['state_bytes'] / 2**20,
            torch['step_ms'], torch['step_ms'] / ours['step_ms']))
    for side in ('ours', 'torch'):
        print('%s: sharded / unsharded optimizer memory per process %.3f' % (
            side, rows['sharded'][side]['state_bytes'] / rows['unsharded'][side]['state_bytes']))
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(dict(machine=describe(), nprocs=args.nprocs,
                           hidden=args.hidden, rows=rows), f, indent=1)


if __name__ == '__main__':
    main()
