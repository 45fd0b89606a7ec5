
op_CreateMutexout0"CreateMutex