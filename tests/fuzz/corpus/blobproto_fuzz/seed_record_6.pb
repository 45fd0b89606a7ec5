ç}∫ñ√
maskTensor":maskZ