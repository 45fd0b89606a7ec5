
op_ImageInput‚out0out1"
ImageInput*

batch_size*	
scale*
minsize*
random_scale*
warp*
crop*

mirror*
is_test*	
color*
mean*
std*
mean_per_channel*
std_per_channel*
use_caffe_datum*

label_type*

num_labels*
output_sizes*
scale_jitter_type*
color_jitter*
img_saturation*
img_brightness*
img_contrast*
color_lighting*
color_lighting_std*
bounding_ymin*
decode_threads*
use_gpu_transform*
output_type*
db*
db_type