
op_CreateScopeout0"CreateScope