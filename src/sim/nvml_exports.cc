#include "nvml/nvml_abi.h"
