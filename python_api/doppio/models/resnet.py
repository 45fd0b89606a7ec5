"""ResNets as Caffe2's models/resnet.py builds them (He et al., 2015), with
Caffe2's blob names, so checkpoints and predictor exports made by Caffe2's
trainer load here.

Names: the stem is conv1 / conv1_spatbn_relu / pool1; each residual
component k (counted over the whole net) names its convolutions
comp_k_conv_1..3, their batch norms comp_k_spatbn_1..3, the projection
shortcut shortcut_projection_k (+ _spatbn), and the sum comp_k_sum_3 (or
comp_k_sum_2 in a basic block), whose in-place Relu ends the component.
Downsampling is on the 3x3 convolution of a bottleneck ("ResNet v1.5").
"""
from doppio import brew

# ResNet-50: (components, base filters, output filters) per stage; the first
# component of every stage but the first downsamples.
_RESNET50_STAGES = ((3, 64, 256), (4, 128, 512), (6, 256, 1024), (3, 512, 2048))


class ResNetBuilder(object):
    """Adds residual components one after another from `prev_blob`, keeping
    the running blob and component count."""

    def __init__(self, model, prev_blob, no_bias, is_test, spatial_bn_mom=0.9):
        self.model = model
        self.comp_count = 0
        self.comp_idx = 0
        self.prev_blob = prev_blob
        self.is_test = is_test
        self.spatial_bn_mom = spatial_bn_mom
        self.no_bias = 1 if no_bias else 0

    def _name(self, what):
        return 'comp_{}_{}_{}'.format(self.comp_count, what, self.comp_idx)

    def add_conv(self, in_filters, out_filters, kernel, stride=1, pad=0):
        self.comp_idx += 1
        self.prev_blob = brew.conv(
            self.model, self.prev_blob, self._name('conv'), in_filters, out_filters,
            weight_init=('MSRAFill', {}), kernel=kernel, stride=stride, pad=pad,
            no_bias=self.no_bias)
        return self.prev_blob

    def add_relu(self):
        self.prev_blob = brew.relu(self.model, self.prev_blob, self.prev_blob)
        return self.prev_blob

    def add_spatial_bn(self, num_filters):
        self.prev_blob = brew.spatial_bn(
            self.model, self.prev_blob, self._name('spatbn'), num_filters, epsilon=1e-3,
            momentum=self.spatial_bn_mom, is_test=self.is_test)
        return self.prev_blob

    def _shortcut(self, shortcut_blob, in_filters, out_filters, stride, bn_momentum):
        """A strided 1x1 projection (+ batch norm) of the component's input."""
        name = 'shortcut_projection_{}'.format(self.comp_count)
        blob = brew.conv(self.model, shortcut_blob, name, in_filters, out_filters,
                         weight_init=('MSRAFill', {}), kernel=1, stride=stride,
                         no_bias=self.no_bias)
        if bn_momentum is None:
            return blob
        bn_args = {} if bn_momentum is False else {'momentum': bn_momentum}
        return brew.spatial_bn(self.model, blob, name + '_spatbn', out_filters,
                               epsilon=1e-3, is_test=self.is_test, **bn_args)

    def _finish_component(self, shortcut_blob, residual_blob):
        self.prev_blob = brew.sum(self.model, [shortcut_blob, residual_blob],
                                  self._name('sum'))
        self.comp_idx += 1
        self.add_relu()
        self.comp_count += 1

    def _conv_bn_relu(self, in_filters, out_filters, kernel, stride, pad, bn, relu=True):
        self.add_conv(in_filters, out_filters, kernel=kernel, stride=stride, pad=pad)
        if bn:
            self.add_spatial_bn(out_filters)
        if relu:
            self.add_relu()
        return self.prev_blob

    def add_bottleneck(self, input_filters, base_filters, output_filters, down_sampling=False,
                       spatial_batch_norm=True):
        """1x1 (reduce) -> 3x3 (strided when down_sampling) -> 1x1 (expand),
        summed with the input, projected when the width grows."""
        self.comp_idx = 0
        shortcut_blob = self.prev_blob
        stride = 2 if down_sampling else 1
        self._conv_bn_relu(input_filters, base_filters, 1, 1, 0, spatial_batch_norm)
        self._conv_bn_relu(base_filters, base_filters, 3, stride, 1, spatial_batch_norm)
        last = self._conv_bn_relu(base_filters, output_filters, 1, 1, 0, spatial_batch_norm,
                                  relu=False)
        if output_filters > input_filters:
            shortcut_blob = self._shortcut(
                shortcut_blob, input_filters, output_filters, stride,
                self.spatial_bn_mom if spatial_batch_norm else None)
        self._finish_component(shortcut_blob, last)

    def add_simple_block(self, input_filters, num_filters, down_sampling=False,
                         spatial_batch_norm=True):
        """Two 3x3 convolutions (the first strided when down_sampling) summed
        with the input, projected when the width changes."""
        self.comp_idx = 0
        shortcut_blob = self.prev_blob
        stride = 2 if down_sampling else 1
        self._conv_bn_relu(input_filters, num_filters, 3, stride, 1, spatial_batch_norm)
        last = self._conv_bn_relu(num_filters, num_filters, 3, 1, 1, spatial_batch_norm,
                                  relu=False)
        if num_filters != input_filters:
            # Caffe2 gives this batch norm SpatialBN's default momentum.
            shortcut_blob = self._shortcut(shortcut_blob, input_filters, num_filters, stride,
                                           False if spatial_batch_norm else None)
        self._finish_component(shortcut_blob, last)


def create_resnet50(model, data, num_input_channels, num_labels, label=None, is_test=False,
                    no_loss=False, no_bias=0, conv1_kernel=7, conv1_stride=2,
                    final_avg_kernel=7):
    """ResNet-50 on `data` (NCHW). Returns the logits blob with no_loss; else
    (softmax, loss) given `label`, or the softmax. conv1_kernel/stride and
    final_avg_kernel adapt it to other image sizes (the average pooling is
    global, so any size works)."""
    brew.conv(model, data, 'conv1', num_input_channels, 64, weight_init=('MSRAFill', {}),
              kernel=conv1_kernel, stride=conv1_stride, pad=3, no_bias=no_bias)
    brew.spatial_bn(model, 'conv1', 'conv1_spatbn_relu', 64, epsilon=1e-3, momentum=0.1,
                    is_test=is_test)
    brew.relu(model, 'conv1_spatbn_relu', 'conv1_spatbn_relu')
    brew.max_pool(model, 'conv1_spatbn_relu', 'pool1', kernel=3, stride=2)

    builder = ResNetBuilder(model, 'pool1', no_bias=no_bias, is_test=is_test,
                            spatial_bn_mom=0.1)
    in_filters = 64
    for stage, (components, base, out_filters) in enumerate(_RESNET50_STAGES):
        for index in range(components):
            builder.add_bottleneck(in_filters, base, out_filters,
                                   down_sampling=(stage > 0 and index == 0))
            in_filters = out_filters

    final_avg = brew.average_pool(model, builder.prev_blob, 'final_avg',
                                  kernel=final_avg_kernel, stride=1, global_pooling=True)
    last_out = brew.fc(model, final_avg, 'last_out_L{}'.format(num_labels), in_filters,
                       num_labels)
    if no_loss:
        return last_out
    if label is not None:
        return model.SoftmaxWithLoss([last_out, label], ['softmax', 'loss'])
    return brew.softmax(model, last_out, 'softmax')


def create_resnet_32x32(model, data, num_input_channels, num_groups, num_labels,
                        is_test=False):
    """The CIFAR ResNet of He et al. section 4.2 (6 * num_groups + 2 layers)
    for 32x32 inputs; returns the softmax."""
    brew.conv(model, data, 'conv1', num_input_channels, 16, kernel=3, stride=1)
    brew.spatial_bn(model, 'conv1', 'conv1_spatbn', 16, epsilon=1e-3, is_test=is_test)
    brew.relu(model, 'conv1_spatbn', 'relu1')
    builder = ResNetBuilder(model, 'relu1', no_bias=0, is_test=is_test)
    in_filters = 16
    for stage, filters in enumerate((16, 32, 64)):
        for index in range(2 * num_groups):
            builder.add_simple_block(in_filters, filters,
                                     down_sampling=(stage > 0 and index == 0))
            in_filters = filters
    brew.average_pool(model, builder.prev_blob, 'final_avg', kernel=8, stride=1)
    brew.fc(model, 'final_avg', 'last_out', 64, num_labels)
    return brew.softmax(model, 'last_out', 'softmax')

