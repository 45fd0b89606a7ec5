
op_Dol
in0out0"Do*
net*
inner_blobs*
outer_blobs_idx*
reuse_workspace*
copy_external_blobs:in0