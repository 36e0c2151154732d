// llama-logits prints llama.cpp's logits for a sequence of token ids, one line of
// space-separated floats per position: the other side of ggufexport's TestLlamaCppAgrees, which
// checks `lily gguf --type f32` on a fixture model against lily's ref. Build it against a
// llama.cpp CPU build (LLAMA = its source tree, with build/bin holding libllama and libggml):
//
//   gcc -O2 -o llama-logits logits.c -I$LLAMA/include -I$LLAMA/ggml/include \
//       -L$LLAMA/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$LLAMA/build/bin
//
// then: LILY_LLAMA_LOGITS=$PWD/llama-logits go test -run LlamaCpp ./internal/ggufexport/
#include "llama.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: logits MODEL ID...\n"); return 2; }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512; cp.n_batch = 512; cp.n_ubatch = 512; cp.n_threads = 2; cp.n_threads_batch = 2;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    int n = argc - 2;
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = atoi(argv[2 + i]); b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(ctx, b) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (int i = 0; i < n; i++) {
        float *l = llama_get_logits_ith(ctx, i);
        for (int j = 0; j < nv; j++) printf(j ? " %.7g" : "%.7g", l[j]);
        printf("\n");
    }
    return 0;
}
