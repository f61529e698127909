"""cntk.internal.sanitize: argument sanitizers."""
from ctk.internal import (is_string, is_byte_buffer, _as_tuple, sanitize_shape, sanitize_precision,  # noqa: F401
                          sanitize_dtype_numpy, sanitize_dtype_cntk, data_type_to_dtype, sanitize_input,
                          sanitize_function, sanitize_variable_or_function, sanitize_variables_or_functions,
                          sanitize_axis, sanitize_axis_list, sanitize_dynamic_axes, sanitize_permutation,
                          sanitize_variable_value_dict, memoize, sanitize_batch, sanitize_value)
