
	op_Resize´
in0out0"Resize*	
sizes*

scales*
mode*"
coordinate_transformation_mode*
nearest_mode*
cubic_coeff_a*
exclude_outside*
extrapolation_value*
roi:in0