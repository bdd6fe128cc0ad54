/*
 * autograd.c - what PyTorch's autograd engine was doing, in the user's
 * terms, from a native function name: the backward node whose apply was
 * running ("MulBackward0::apply" -> "mul"). The autograd engine's threads
 * (named "pt_autograd_<device>" by Engine::thread_init,
 * torch/csrc/autograd/engine.cpp: `std::string thread_name = "pt_autograd_" +
 * std::to_string(device); c10::setThreadName(thread_name);`) never run
 * Python, so this is all their stacks can say of what they allocate for.
 *
 * The names come from PyTorch's code generator:
 *  - each differentiable operator gets a Node subclass named by
 *    _create_op_prefix (tools/autograd/load_derivatives.py): `camel_case =
 *    ''.join([p.title() for p in name.split('_')])`, then `(camel_case +
 *    'Backward').replace('ForwardBackward', 'Backward')`, and the op is
 *    `f'{op_prefix}{op_counter[op_prefix]}'`: mul -> MulBackward0 (and
 *    MulBackward1 for its next overload), addmm -> AddmmBackward0,
 *    native_layer_norm -> NativeLayerNormBackward0, upsample_bilinear2d ->
 *    UpsampleBilinear2DBackward0 (title() capitalizes a letter after a
 *    digit), nll_loss_forward -> NllLossBackward0;
 *  - their apply is FUNCTION_DEFINITION in
 *    tools/autograd/gen_autograd_functions.py, `variable_list
 *    ${op}::apply(variable_list&& grads)`, emitted inside `namespace
 *    torch::autograd::generated {` (tools/autograd/templates/Functions.cpp);
 *    variable_list is std::vector<at::Tensor>. So the function on the stack
 *    is torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor,
 *    std::allocator<at::Tensor> >&&), linkage name
 *    _ZN5torch8autograd9generated12MulBackward05applyEOSt6vectorIN2at6TensorESaIS5_EE;
 *  - the engine calls it through Node::operator() (torch/csrc/autograd/
 *    function.h: `variable_list operator()(variable_list&& inputs)` ...
 *    `return apply(std::move(inputs));`), so it stands below whatever the
 *    backward formula allocated with.
 *
 * Symbolized names are linkage (mangled) names when the binary has them
 * (symbolize.c), demangled ones otherwise: both are read. The operator's
 * name is the class name less "Backward<N>", its capitals back to
 * underscores; what title() lost (a leading underscore, "_forward") stays
 * lost: _softmax reads "softmax", nll_loss_forward "nll_loss".
 */
#include <ctype.h>
#include <string.h>

#include "analyzer/symbols/symbols_int.h"

#define MANGLED_PREFIX "_ZN5torch8autograd9generated"
#define DEMANGLED_PREFIX "torch::autograd::generated::"

/* The class name of a generated node's apply in function: its start and
 * length, or 0. */
static size_t node_class(const char *function, const char **start)
{
    size_t plen = strlen(MANGLED_PREFIX);
    if (strncmp(function, MANGLED_PREFIX, plen) == 0) {
        const char *p = function + plen;
        size_t len = 0;
        if (*p < '1' || *p > '9')
            return 0;
        while (isdigit((unsigned char)*p) && len < 1000)
            len = len * 10 + (size_t)(*p++ - '0');
        if (len >= 1000 || strnlen(p, len) < len || strncmp(p + len, "5applyE", 7) != 0)
            return 0;
        *start = p;
        return len;
    }
    plen = strlen(DEMANGLED_PREFIX);
    if (strncmp(function, DEMANGLED_PREFIX, plen) == 0) {
        const char *p = function + plen, *end = p;
        while (isalnum((unsigned char)*end) || *end == '_')
            end++;
        if (end == p || strncmp(end, "::apply", 7) != 0 ||
            (end[7] && end[7] != '(' && end[7] != ' '))
            return 0;
        *start = p;
        return (size_t)(end - p);
    }
    return 0;
}

int gs_autograd_backward_of(const char *function, char *out, size_t outsz)
{
    const char *name = "";
    size_t len = function ? node_class(function, &name) : 0;
    /* <Op>Backward<N>: the counter, then "Backward", then the operator */
    size_t end = len;
    while (end > 0 && isdigit((unsigned char)name[end - 1]))
        end--;
    if (end == len || end < 9 || strncmp(name + end - 8, "Backward", 8) != 0)
        return 0;
    end -= 8;
    size_t n = 0;
    for (size_t i = 0; i < end; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '_')
            return 0;
        /* title() starts each part with a capital, and capitalizes a letter
         * after a digit too, which started no part */
        int part = isupper(c) && i > 0 && islower((unsigned char)name[i - 1]);
        if (n + 2 + (size_t)part > outsz)
            return 0;
        if (part)
            out[n++] = '_';
        out[n++] = (char)tolower(c);
    }
    out[n] = 0;
    return 1;
}
