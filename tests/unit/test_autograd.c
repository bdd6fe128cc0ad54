/*
 * test_autograd.c - analyzer/symbols/autograd.c: the names of PyTorch's generated
 * backward nodes' apply, mangled (as symbol tables and DWARF linkage names
 * give them) and demangled, to the operator they are the backward of,
 * following _create_op_prefix (tools/autograd/load_derivatives.py)
 * backwards; and the names that are not one, which say nothing.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "analyzer/symbols/symbols_int.h"

static void says(const char *function, const char *op)
{
    char out[128];
    cr_assert_eq(gs_autograd_backward_of(function, out, sizeof out), 1, "%s is a backward", function);
    cr_assert_str_eq(out, op, "%s", function);
}

static void silent(const char *function)
{
    char out[128] = "untouched";
    cr_assert_eq(gs_autograd_backward_of(function, out, sizeof out), 0, "%s is no backward",
                 function ? function : "NULL");
}

Test(autograd, mangled_names_of_generated_nodes)
{
    /* torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor>&&), as g++
     * mangles it (checked with c++filt) */
    says("_ZN5torch8autograd9generated12MulBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "mul");
    says("_ZN5torch8autograd9generated14AddmmBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "addmm");
    says("_ZN5torch8autograd9generated12MulBackward15applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "mul"); /* the next overload */
    says("_ZN5torch8autograd9generated24NativeLayerNormBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "native_layer_norm");
    says("_ZN5torch8autograd9generated27UpsampleBilinear2DBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "upsample_bilinear2d"); /* title() capitalized the d after the 2 */
    says("_ZN5torch8autograd9generated16NllLossBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "nll_loss"); /* nll_loss_forward: "ForwardBackward" became "Backward" */
    says("_ZN5torch8autograd9generated28ConvolutionBackwardBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "convolution_backward"); /* double backward */
    says("_ZN5torch8autograd9generated16SoftmaxBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "softmax"); /* _softmax: the leading underscore is lost */
    says("_ZN5torch8autograd9generated15IndexBackward125applyEOSt6vectorIN2at6TensorESaIS5_EE",
         "index");
    says("_ZN5torch8autograd9generated12MulBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE.cold",
         "mul"); /* a function's cold part */
}

Test(autograd, demangled_names_of_generated_nodes)
{
    says("torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor, "
         "std::allocator<at::Tensor> >&&)",
         "mul");
    says("torch::autograd::generated::AddmmBackward0::apply", "addmm");
    says("torch::autograd::generated::FftR2CBackward0::apply(std::vector<at::Tensor>&&) [clone "
         ".cold]",
         "fft_r2c");
}

Test(autograd, other_names_say_nothing)
{
    silent(NULL);
    silent("");
    silent("main");
    silent("grad_alloc");
    silent("MulBackward0");
    /* other members of a generated node */
    silent("_ZN5torch8autograd9generated12MulBackward07releaseEv");
    silent("_ZNK5torch8autograd9generated12MulBackward04nameB5cxx11Ev");
    silent("torch::autograd::generated::MulBackward0::release_variables()");
    silent("torch::autograd::generated::MulBackward0::apply_with_saved(...)");
    /* nodes that are not generated, and classes not named <Op>Backward<N> */
    silent("_ZN5torch8autograd14AccumulateGrad5applyEOSt6vectorIN2at6TensorESaIS4_EE");
    silent("_ZN5torch8autograd13CopyBackwards5applyEOSt6vectorIN2at6TensorESaIS4_EE");
    silent("_ZN5torch8autograd9generated9Backward05applyEOSt6vectorIN2at6TensorESaIS5_EE");
    silent("_ZN5torch8autograd9generated11MulBackward5applyEOSt6vectorIN2at6TensorESaIS5_EE");
    silent("torch::autograd::generated::Mul0::apply()");
    /* lengths that do not hold: past the name, a leading zero, absurd */
    silent("_ZN5torch8autograd9generated99MulBackward05applyE");
    silent("_ZN5torch8autograd9generated012MulBackward05applyE");
    silent("_ZN5torch8autograd9generated99999999999999999999999MulBackward0");
    silent("_ZN5torch8autograd9generated12MulBackward0");
}

Test(autograd, out_too_small)
{
    char out[4];
    cr_assert_eq(gs_autograd_backward_of("torch::autograd::generated::AddmmBackward0::apply", out,
                                         sizeof out),
                 0, "addmm does not fit in 4 bytes");
    cr_assert_eq(gs_autograd_backward_of("torch::autograd::generated::MulBackward0::apply", out,
                                         sizeof out),
                 1, "mul does");
    cr_assert_str_eq(out, "mul");
}
