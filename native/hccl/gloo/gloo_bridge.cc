// The gloo bridge (pa_gloo.h): C++ only because gloo is. It turns the
// caller's key-value store into a gloo rendezvous store, connects the full
// mesh of TCP pairs, and runs batches of unbound-buffer sends and receives.
// Every gloo exception becomes a status code and a message.
#include "hccl/gloo/pa_gloo.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

namespace {

void set_err(char *err, size_t cap, const std::string &what) {
    if (err != nullptr && cap > 0) std::snprintf(err, cap, "%s", what.c_str());
}

// gloo's Store over the caller's (C) store. gloo reports failures by
// throwing; so does this.
class CStore : public gloo::rendezvous::Store {
  public:
    CStore(const pa_gloo_store &s, int64_t timeout_ms) : s_(s), timeout_ms_(timeout_ms) {}

    void set(const std::string &key, const std::vector<char> &data) override {
        char err[512] = "";
        if (s_.set(s_.ctx, key.c_str(), data.data(), data.size(), err, sizeof err) != PA_GLOO_OK) {
            throw gloo::IoException(std::string("rendezvous store: ") + err);
        }
    }

    std::vector<char> get(const std::string &key) override {
        char err[512] = "";
        void *val = nullptr;
        size_t len = 0;
        if (s_.get(s_.ctx, key.c_str(), &val, &len, timeout_ms_, err, sizeof err) != PA_GLOO_OK) {
            throw gloo::IoException(std::string("rendezvous store: ") + err);
        }
        std::vector<char> out(static_cast<char *>(val), static_cast<char *>(val) + len);
        std::free(val);
        return out;
    }

    void wait(const std::vector<std::string> &keys) override { wait(keys, std::chrono::milliseconds(timeout_ms_)); }

    void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override {
        for (const auto &k : keys) {
            char err[512] = "";
            void *val = nullptr;
            size_t len = 0;
            if (s_.get(s_.ctx, k.c_str(), &val, &len, timeout.count(), err, sizeof err) != PA_GLOO_OK) {
                throw gloo::IoException(std::string("rendezvous store: ") + err);
            }
            std::free(val);
        }
    }

  private:
    pa_gloo_store s_;
    int64_t timeout_ms_;
};

struct Ctx {
    std::shared_ptr<gloo::rendezvous::Context> context;
};

void *bridge_connect(uint32_t rank, uint32_t size, const char *host, const pa_gloo_store *store, int64_t timeout_ms,
                     char *err, size_t cap) {
    try {
        gloo::transport::tcp::attr attr;
        attr.hostname = host;
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        auto ctx = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(rank), static_cast<int>(size));
        ctx->setTimeout(std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 24 * 3600 * 1000LL));
        CStore s(*store, timeout_ms);
        ctx->connectFullMesh(s, dev);
        return new Ctx{ctx};
    } catch (const std::exception &e) {
        set_err(err, cap, e.what());
    } catch (...) {
        set_err(err, cap, "unknown exception");
    }
    return nullptr;
}

// Closes every connection of a context whose transfer failed.
void abandon(Ctx *c) {
    try {
        c->context->closeConnections();
    } catch (...) {
    }
}

int bridge_transfer(void *p, const pa_gloo_xfer *sends, uint32_t nsend, const pa_gloo_xfer *recvs, uint32_t nrecv,
                    int64_t timeout_ms, char *err, size_t cap) {
    Ctx *c = static_cast<Ctx *>(p);
    const auto timeout = std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 24 * 3600 * 1000LL);
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> out, in;
    try {
        for (uint32_t i = 0; i < nrecv; i++) {
            in.push_back(c->context->createUnboundBuffer(recvs[i].ptr, recvs[i].bytes));
            in.back()->recv(static_cast<int>(recvs[i].peer), recvs[i].slot);
        }
        for (uint32_t i = 0; i < nsend; i++) {
            out.push_back(c->context->createUnboundBuffer(sends[i].ptr, sends[i].bytes));
            out.back()->send(static_cast<int>(sends[i].peer), sends[i].slot);
        }
        for (auto &b : in) {
            if (!b->waitRecv(timeout)) {
                abandon(c);
                set_err(err, cap, "a receive did not complete");
                return PA_GLOO_IO;
            }
        }
        for (auto &b : out) {
            if (!b->waitSend(timeout)) {
                abandon(c);
                set_err(err, cap, "a send did not complete");
                return PA_GLOO_IO;
            }
        }
        return PA_GLOO_OK;
    } catch (const gloo::IoException &e) {
        // No late I/O may reach the caller's buffers once this returns.
        abandon(c);
        const std::string what = e.what();
        set_err(err, cap, what);
        return what.find("Timed out") != std::string::npos || what.find("timed out") != std::string::npos
                   ? PA_GLOO_TIMEOUT
                   : PA_GLOO_IO;
    } catch (const std::exception &e) {
        abandon(c);
        set_err(err, cap, e.what());
    } catch (...) {
        abandon(c);
        set_err(err, cap, "unknown exception");
    }
    return PA_GLOO_ERROR;
}

void bridge_close(void *p) {
    Ctx *c = static_cast<Ctx *>(p);
    try {
        c->context->closeConnections();
    } catch (...) {
    }
    delete c;
}

const pa_gloo_api g_api = {PA_GLOO_ABI, bridge_connect, bridge_transfer, bridge_close};

}  // namespace

extern "C" __attribute__((visibility("default"))) const pa_gloo_api *pa_gloo_bridge(void) { return &g_api; }
