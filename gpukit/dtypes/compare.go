package dtypes

// Round is v rounded to dt: to dt's precision for the floating types
// (through float32 for the 16-bit ones, as c10::Half and c10::BFloat16
// convert a double), v itself for the integer types.
//
// It is the scalar that a comparison of operands of dtype dt with a scalar
// compares against. This is PyTorch's rule: a Python number is a wrapped
// number, which counts in type promotion by its category alone
// (update_result_type_state in aten/src/ATen/native/TypeProperties.cpp;
// the "Type promotion" section of docs/source/tensor_attributes.rst), so
// the comparison runs in the tensor's dtype and
// torch.tensor([0.1], dtype=torch.float32) == 0.1 is True (PyTorch 1.13.1,
// measured). Every Compute applies it in BinaryScalar's comparisons,
// whatever dst's dtype.
func Round(dt Dtype, v float64) float64 {
	switch dt {
	case Float32:
		return float64(float32(v))
	case Float16:
		return float64(Float16ToFloat32(Float32ToFloat16(float32(v))))
	case BFloat16:
		return float64(BFloat16ToFloat32(Float32ToBFloat16(float32(v))))
	}
	return v
}
