"""Whole-net rewrites of core.Net (Clone, AppendNet, RunAllOnGPU,
RunAllOnMKL), kept apart from the op-building half in core_net.py. A mixin:
it reads the Net's `_net` proto and lookup tables."""
import collections
import copy
import logging

from doppio import _C
from doppio import ssa
from doppio.proto import doppio_pb2 as caffe2_pb2


class NetRewrites(object):
    """Mixed into core.Net."""

    def Clone(self, name, blob_remap=None, op_id_mask=None, remap_funcs=None,
              keep_schema=True, update_external_list=False):
        """A copy named `name`, keeping the ops at `op_id_mask` (default all)
        with blobs renamed by `blob_remap`; `remap_funcs` maps op types to
        f(op, prefix, blob_remap) for ops that name blobs in arguments."""
        blob_remap = {} if blob_remap is None else {str(k): str(v) for k, v in blob_remap.items()}
        remap_funcs = remap_funcs or {}
        if op_id_mask is None:
            op_id_mask = range(len(self._net.op))

        def remap_list(names):
            new_names = [blob_remap.get(str(b), str(b)) for b in names]
            del names[:]
            names.extend(new_names)

        new_proto = caffe2_pb2.NetDef()
        new_proto.CopyFrom(self._net)
        new_proto.name = name
        del new_proto.op[:]
        for op_id in op_id_mask:
            op = new_proto.op.add()
            op.CopyFrom(self._net.op[op_id])
            remap_list(op.input)
            remap_list(op.output)
            if op.type in remap_funcs:
                remap_funcs[op.type](op, (name + '/') if name else '', blob_remap)
        remap_list(new_proto.external_input)
        remap_list(new_proto.external_output)
        new_net = type(self)(new_proto)
        new_net._attr_dict = self._attr_dict
        if update_external_list:
            produced, consumed = [], set()
            del new_net._net.external_input[:]
            del new_net._net.external_output[:]
            for op in new_net._net.op:
                for blob in op.input:
                    if blob in produced:
                        consumed.add(blob)
                    elif blob not in new_net._net.external_input:
                        new_net._net.external_input.append(blob)
                for blob in op.output:
                    if blob not in produced:
                        produced.append(blob)
            new_net._net.external_output.extend(b for b in produced if b not in consumed)
            new_net._RecreateLookupTables()
        return new_net

    def ClonePartial(self, name, inputs, outputs, remap_funcs=None):
        """(new_net, new_outputs): a clone named `name` of just the ops
        needed to compute `outputs` from `inputs` (a list, or a map from
        this net's blobs to the clone's input names). Blobs made inside get
        the prefix `name/`; blobs read before any op writes them keep their
        names and become inputs too."""
        pairs = isinstance(inputs, list) and all(
            isinstance(i, tuple) and len(i) == 2 for i in inputs)
        if isinstance(inputs, dict):
            inputs = collections.OrderedDict(inputs)
        else:
            inputs = collections.OrderedDict(inputs if pairs else zip(inputs, inputs))
        for output in outputs:
            if not self.BlobIsDefined(output):
                raise AssertionError('ClonePartial: net {!r} does not compute {}'.format(
                    self.Name(), output))
        input_names = {str(k): str(v) for k, v in inputs.items()}
        output_names = [str(o) for o in outputs]
        versions = {str(i): 0 for i in inputs}
        graph, versions = ssa.get_ssa(self._net, versions)
        used = ssa.get_op_ids_in_path(graph, versions, inputs, outputs)
        if set(used) & set(ssa.get_op_ids_in_path(graph, versions, [], inputs)):
            raise AssertionError('ClonePartial: some of the ops needed would also compute the '
                             'given inputs')
        undefined = ssa.get_undefined_blobs(
            [op for i, op in enumerate(graph) if i in used]) - set(input_names)
        prefix = (name + '/') if name else ''

        def remap(blob):
            if blob in input_names:
                return input_names[blob]
            return blob if blob in undefined else prefix + blob

        mapping = {blob: remap(blob) for blob in versions}
        new_net = self.Clone(name, mapping, used, remap_funcs)
        new_inputs = [mapping[i] for i in input_names] + sorted(undefined)
        new_outputs = [mapping[o] for o in output_names]
        proto = new_net.Proto()
        del proto.external_input[:]
        proto.external_input.extend(new_inputs)
        del proto.external_output[:]
        proto.external_output.extend(new_outputs)
        new_net._RecreateLookupTables()
        return new_net, [new_net.GetBlobRef(o) for o in new_outputs]

    def PopulateProtoWithFileName(self):
        """Names each op after where a script created it: "file:line:function"
        (Caffe2's debugging aid for errors)."""
        for index, site in self._op_sites.items():
            if index < len(self._net.op):
                self._net.op[index].name = ':'.join(str(part) for part in site)

    def AppendNet(self, net, device_option=None):
        """Appends `net`'s ops (with `device_option` if given) and merges its
        external inputs (those this net does not produce) and outputs."""
        if not isinstance(net, NetRewrites):
            raise TypeError('AppendNet takes a Net, got {}'.format(type(net).__name__))
        if self._recreate_lookup_tables:
            self._RecreateLookupTables()
        for blob in net.Proto().external_input:
            if blob not in self._net.external_input and blob not in self._op_outputs:
                self._net.external_input.append(blob)
                self._external_input_map.add(blob)
        self._net.external_output.extend(
            o for o in net.Proto().external_output if o not in self._net.external_output)
        ops = [copy.deepcopy(op) for op in net.Proto().op]
        if device_option is not None:
            for op in ops:
                op.device_option.CopyFrom(device_option)
        self._ExtendOps(ops)
        return self

    def RunAllOnGPU(self, gpu_id=0, use_cudnn=False):
        """Puts every op on CUDA device `gpu_id` (with engine CUDNN when
        `use_cudnn`). On a machine with no usable GPU the ops stay where they
        are and a warning says so: Caffe2 scripts call this unconditionally
        (resnet50_trainer.py's LoadModel does even with --use_cpu), and a
        CPU op set is the only one that can run there."""
        if _C.num_cuda_devices() == 0:
            logging.getLogger('doppio').warning(
                'net %s: RunAllOnGPU(%d) on a machine without a usable GPU (%s); its ops stay '
                'on their devices', self.Name(), gpu_id, _C.cuda_unavailable_reason())
            return
        device = caffe2_pb2.DeviceOption(device_type=caffe2_pb2.CUDA, cuda_gpu_id=gpu_id)
        self._net.device_option.CopyFrom(device)
        for op in self._net.op:
            op.device_option.CopyFrom(device)
            if use_cudnn:
                op.engine = 'CUDNN'

    def RunAllOnMKL(self):
        """Caffe2 moved the ops to its MKL-DNN device; Doppio's CPU ops
        already run on oneDNN where it helps, so the ops become plain CPU
        ops."""
        device = caffe2_pb2.DeviceOption(device_type=caffe2_pb2.CPU)
        self._net.device_option.CopyFrom(device)
        for op in self._net.op:
            op.device_option.CopyFrom(device)
