
op_LearningRateÜ
in0out0"LearningRate*
base_lr*

policy*
lr_scale*
stepsize*
	stepsizes*	
gamma*	
power*
max_iter*
num_iter*
start_multiplier*

multiplier*
end_multiplier*
active_first*
active_period*
inactive_period*

max_lr*

min_lr*

period*

t_mult*
	lr_shrink*
sub_policy_num_iters:in0