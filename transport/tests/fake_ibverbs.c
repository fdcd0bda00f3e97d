/*
 * A stand-in for libibverbs.so.1 used by rcud's tests of the rdma-core
 * verbs provider on hosts without RDMA hardware or rdma-core.
 *
 * It exports the subset of libibverbs that the provider resolves and
 * implements it with one in-process loopback adapter, "fakeib0": queue pairs
 * of this process connected to each other move data by memcpy when a send is
 * posted; completions are queued in order; a completion channel is a pipe.
 * It checks what a real adapter checks that matters to the provider: keys,
 * access rights and bounds of regions, the attribute masks of each queue-pair
 * transition, the address vector (LID, or GID with a global route on
 * Ethernet), PSNs, and that objects are released in a legal order.
 *
 * The struct layouts below are written from the x86-64/aarch64 LP64 ABI of
 * libibverbs (the same layouts verbs.h defines); fake_ibv_layout() reports
 * them so that a test compares them with the provider's generated bindings.
 *
 * Asynchronous events: every context has a pipe as its async descriptor;
 * fake_ibv_inject_async_event(type, qp_num, port) queues an event on every
 * open context (a queue-pair event only on that queue pair's context, which
 * it moves to the error state as an adapter would) and
 * fake_ibv_async_events_unacked() counts those taken and not acknowledged.
 *
 * Knobs (environment, read at first use):
 *   FAKE_IBV_DEVICES=0        list no adapter
 *   FAKE_IBV_MAX_MR=n         ibv_reg_mr fails with ENOMEM beyond n live regions
 *   FAKE_IBV_LINK_LAYER=ethernet   a RoCE port: LID 0, global routes required
 *
 * Not thread-safe beyond one global lock, which every entry point takes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- ABI layouts ------------------------------------------------------ */

struct ibv_device {
	char name[64];
};

struct ibv_context;
struct ibv_cq;
struct ibv_qp;
struct ibv_send_wr;
struct ibv_recv_wr;
struct ibv_wc;

/* The context's operation table: 32 pointers; the four the header's inline
 * functions call sit at indices 11, 12, 25 and 26. */
struct ibv_context_ops {
	void *slots_0_10[11];
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	void *slots_13_24[12];
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	void *slots_27_31[5];
};

struct ibv_context {
	struct ibv_device *device;
	struct ibv_context_ops ops;
	int cmd_fd;
	int async_fd;
	int num_comp_vectors;
	pthread_mutex_t mutex;
	void *abi_compat;
};

union ibv_async_element {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	void *srq;
	void *wq;
	int port_num;
};

struct ibv_async_event {
	union ibv_async_element element;
	unsigned int event_type; /* enum ibv_event_type */
};

struct ibv_device_attr {
	char fw_ver[64];
	uint64_t node_guid;
	uint64_t sys_image_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	unsigned int device_cap_flags;
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int rd_atom_and_more[20]; /* max_qp_rd_atom .. max_srq_sge */
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
};

struct ibv_port_attr {
	uint32_t state;
	uint32_t max_mtu;
	uint32_t active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
	uint16_t port_cap_flags2;
};

union ibv_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;
		uint64_t interface_id;
	} global;
};

struct ibv_pd {
	struct ibv_context *context;
	uint32_t handle;
};

struct ibv_mr {
	struct ibv_context *context;
	struct ibv_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

struct ibv_comp_channel {
	struct ibv_context *context;
	int fd;
	int refcnt;
};

struct ibv_cq {
	struct ibv_context *context;
	struct ibv_comp_channel *channel;
	void *cq_context;
	uint32_t handle;
	int cqe;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t comp_events_completed;
	uint32_t async_events_completed;
};

struct ibv_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct ibv_qp {
	struct ibv_context *context;
	void *qp_context;
	struct ibv_pd *pd;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	void *srq;
	uint32_t handle;
	uint32_t qp_num;
	uint32_t state;
	uint32_t qp_type;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
};

struct ibv_qp_init_attr {
	void *qp_context;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	void *srq;
	struct ibv_qp_cap cap;
	uint32_t qp_type;
	int sq_sig_all;
};

struct ibv_global_route {
	union ibv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct ibv_ah_attr {
	struct ibv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

struct ibv_qp_attr {
	uint32_t qp_state;
	uint32_t cur_qp_state;
	uint32_t path_mtu;
	uint32_t path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct ibv_qp_cap cap;
	struct ibv_ah_attr ah_attr;
	struct ibv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

struct ibv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct ibv_send_wr {
	uint64_t wr_id;
	struct ibv_send_wr *next;
	struct ibv_sge *sg_list;
	int num_sge;
	uint32_t opcode;
	unsigned int send_flags;
	uint32_t imm_data; /* network order */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		uint64_t atomic_and_ud[4];
	} wr;
	uint32_t xrc_remote_srqn;
	union {
		uint64_t bind_mw_and_tso[6];
	} extra;
};

struct ibv_recv_wr {
	uint64_t wr_id;
	struct ibv_recv_wr *next;
	struct ibv_sge *sg_list;
	int num_sge;
};

struct ibv_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* network order */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

/* ---- ABI constants ----------------------------------------------------- */

enum { PORT_ACTIVE = 4, MTU_4096 = 5, LINK_IB = 1, LINK_ETH = 2 };
enum { QPT_RC = 2 };
enum { QPS_RESET, QPS_INIT, QPS_RTR, QPS_RTS, QPS_SQD, QPS_SQE, QPS_ERR };
enum {
	ACC_LOCAL_WRITE = 1, ACC_REMOTE_WRITE = 2,
};
enum {
	M_STATE = 1 << 0, M_CUR_STATE = 1 << 1, M_ACCESS = 1 << 3,
	M_PKEY = 1 << 4, M_PORT = 1 << 5, M_AV = 1 << 7, M_MTU = 1 << 8,
	M_TIMEOUT = 1 << 9, M_RETRY = 1 << 10, M_RNR_RETRY = 1 << 11,
	M_RQ_PSN = 1 << 12, M_MAX_QP_RD = 1 << 13, M_ALT_PATH = 1 << 14,
	M_MIN_RNR = 1 << 15, M_SQ_PSN = 1 << 16, M_MAX_DEST_RD = 1 << 17,
	M_MIG = 1 << 18, M_DEST_QPN = 1 << 20,
};
enum { WR_RDMA_WRITE, WR_RDMA_WRITE_IMM, WR_SEND, WR_SEND_IMM };
enum { SEND_SIGNALED = 2 };
enum {
	WC_SUCCESS = 0, WC_LOC_LEN = 1, WC_LOC_PROT = 4, WC_FLUSH = 5,
	WC_REM_INV_REQ = 9, WC_REM_ACCESS = 10, WC_REM_OP = 11,
	WC_RETRY_EXC = 12, WC_RNR_RETRY_EXC = 13,
};
enum { OP_SEND = 0, OP_RDMA_WRITE = 1, OP_RECV = 128, OP_RECV_RDMA_IMM = 129 };
enum { WC_WITH_IMM = 2 };

#define MAX_QP_WR 1024
#define MAX_CQE 65536
#define FAKE_LID 0x11

/* ---- the fake's objects ------------------------------------------------ */

static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device devices[1] = { { "fakeib0" } };
static long live; /* contexts, domains, regions, channels, queues, QPs */
static int cfg_read, cfg_devices = 1, cfg_max_mr = 4096, cfg_eth;

static void config(void)
{
	const char *s;
	if (cfg_read)
		return;
	cfg_read = 1;
	if ((s = getenv("FAKE_IBV_DEVICES")))
		cfg_devices = atoi(s) > 0;
	if ((s = getenv("FAKE_IBV_MAX_MR")))
		cfg_max_mr = atoi(s);
	if ((s = getenv("FAKE_IBV_LINK_LAYER")))
		cfg_eth = strcmp(s, "ethernet") == 0;
}

static const uint8_t port_gid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
				      0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55 };

struct fake_pd {
	struct ibv_pd pd;
	long users; /* regions and queue pairs */
};

struct fake_mr {
	struct ibv_mr mr;
	int access;
	struct fake_mr *next;
};
static struct fake_mr *mrs;
static int live_mrs;
static uint32_t next_key = 0x100;

struct fake_channel {
	struct ibv_comp_channel ch;
	int wfd;
	struct ibv_cq *events[64];
	int head, count;
	long users;
};

struct fake_cq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	int head, count;
	int armed, overrun;
	unsigned int events, acked;
	long users;
};

struct recv_slot {
	uint64_t wr_id;
	int has_sge;
	struct ibv_sge sge;
};

struct fake_qp {
	struct ibv_qp qp;
	uint32_t max_send, max_recv;
	struct recv_slot *rq;
	uint32_t rq_head, rq_count;
	uint32_t access, dest_qpn, rq_psn, sq_psn;
	struct fake_qp *next;
};
static struct fake_qp *qps;
static uint32_t next_qpn = 0x100;

/* A context with its queue of asynchronous events; `wfd` is the write end of
 * the pipe whose read end is the context's async_fd. */
struct fake_ctx {
	struct ibv_context ctx;
	int wfd;
	struct ibv_async_event q[64];
	int head, count;
	struct fake_ctx *next;
};
static struct fake_ctx *ctxs;
static long async_unacked;

#define PD(p) ((struct fake_pd *)(p))
#define CQ(c) ((struct fake_cq *)(c))
#define QP(q) ((struct fake_qp *)(q))
#define CH(c) ((struct fake_channel *)(c))

/* ---- devices and contexts --------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num)
{
	pthread_mutex_lock(&big);
	config();
	int n = cfg_devices;
	pthread_mutex_unlock(&big);
	struct ibv_device **list = calloc(n + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		list[i] = &devices[i];
	if (num)
		*num = n;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev->name;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int fake_req_notify_cq(struct ibv_cq *cq, int solicited_only);
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	struct fake_ctx *fc = calloc(1, sizeof(*fc));
	int fds[2];
	if (!fc || pipe(fds) != 0) {
		free(fc);
		errno = ENOMEM;
		return NULL;
	}
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	fc->wfd = fds[1];
	struct ibv_context *ctx = &fc->ctx;
	ctx->device = dev;
	ctx->cmd_fd = -1;
	ctx->async_fd = fds[0];
	ctx->num_comp_vectors = 1;
	ctx->ops.poll_cq = fake_poll_cq;
	ctx->ops.req_notify_cq = fake_req_notify_cq;
	ctx->ops.post_send = fake_post_send;
	ctx->ops.post_recv = fake_post_recv;
	pthread_mutex_lock(&big);
	config();
	live++;
	fc->next = ctxs;
	ctxs = fc;
	pthread_mutex_unlock(&big);
	return ctx;
}

int ibv_close_device(struct ibv_context *ctx)
{
	struct fake_ctx *fc = (struct fake_ctx *)ctx;
	pthread_mutex_lock(&big);
	live--;
	for (struct fake_ctx **p = &ctxs; *p; p = &(*p)->next) {
		if (*p == fc) {
			*p = fc->next;
			break;
		}
	}
	pthread_mutex_unlock(&big);
	close(ctx->async_fd);
	close(fc->wfd);
	free(fc);
	return 0;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	(void)ctx;
	memset(a, 0, sizeof(*a));
	strcpy(a->fw_ver, "0.0.0-fake");
	a->max_mr_size = (uint64_t)1 << 40;
	a->page_size_cap = 4096;
	a->max_qp = 1024;
	a->max_qp_wr = MAX_QP_WR;
	a->max_sge = 4;
	a->max_cq = 1024;
	a->max_cqe = MAX_CQE;
	a->max_mr = cfg_max_mr;
	a->max_pd = 64;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
	return 0;
}

int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a)
{
	(void)ctx;
	if (port != 1)
		return EINVAL;
	a->state = PORT_ACTIVE;
	a->max_mtu = MTU_4096;
	a->active_mtu = MTU_4096;
	a->gid_tbl_len = 2;
	a->max_msg_sz = 1u << 30;
	a->pkey_tbl_len = 1;
	a->lid = cfg_eth ? 0 : FAKE_LID;
	a->link_layer = cfg_eth ? LINK_ETH : LINK_IB;
	a->phys_state = 5;
	return 0;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	(void)ctx;
	if (port != 1 || index < 0 || index > 1)
		return -1;
	/* Entry 1 is empty, as unused table entries are. */
	memset(gid->raw, 0, 16);
	if (index == 0)
		memcpy(gid->raw, port_gid, 16);
	return 0;
}

/* ---- domains and regions ---------------------------------------------- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct fake_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pd.context = ctx;
	pthread_mutex_lock(&big);
	live++;
	pthread_mutex_unlock(&big);
	return &pd->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	pthread_mutex_lock(&big);
	if (PD(pd)->users) {
		pthread_mutex_unlock(&big);
		return EBUSY;
	}
	live--;
	pthread_mutex_unlock(&big);
	free(pd);
	return 0;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	pthread_mutex_lock(&big);
	if (live_mrs >= cfg_max_mr) {
		pthread_mutex_unlock(&big);
		errno = ENOMEM;
		return NULL;
	}
	if ((access & ACC_REMOTE_WRITE) && !(access & ACC_LOCAL_WRITE)) {
		pthread_mutex_unlock(&big);
		errno = EINVAL;
		return NULL;
	}
	struct fake_mr *m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&big);
		errno = ENOMEM;
		return NULL;
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.lkey = next_key;
	m->mr.rkey = next_key + 0x10000;
	next_key++;
	m->access = access;
	m->next = mrs;
	mrs = m;
	live_mrs++;
	live++;
	PD(pd)->users++;
	pthread_mutex_unlock(&big);
	return &m->mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	pthread_mutex_lock(&big);
	for (struct fake_mr **p = &mrs; *p; p = &(*p)->next) {
		if (&(*p)->mr == mr) {
			struct fake_mr *m = *p;
			*p = m->next;
			PD(m->mr.pd)->users--;
			live_mrs--;
			live--;
			pthread_mutex_unlock(&big);
			free(m);
			return 0;
		}
	}
	pthread_mutex_unlock(&big);
	return EINVAL;
}

/* The region of `pd` holding [addr, addr + len) under `key`, with `access`. */
static struct fake_mr *find_mr(struct ibv_pd *pd, uint32_t key, int remote,
			       uint64_t addr, uint64_t len, int access)
{
	for (struct fake_mr *m = mrs; m; m = m->next) {
		if (m->mr.pd != pd || (remote ? m->mr.rkey : m->mr.lkey) != key)
			continue;
		uint64_t base = (uint64_t)(uintptr_t)m->mr.addr;
		if (addr < base || len > m->mr.length || addr - base > m->mr.length - len)
			return NULL;
		if ((m->access & access) != access)
			return NULL;
		return m;
	}
	return NULL;
}

/* ---- completion channels and queues ----------------------------------- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	int fds[2];
	struct fake_channel *c = calloc(1, sizeof(*c));
	if (!c || pipe(fds) != 0) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->ch.context = ctx;
	c->ch.fd = fds[0];
	c->wfd = fds[1];
	fcntl(c->wfd, F_SETFL, O_NONBLOCK);
	pthread_mutex_lock(&big);
	live++;
	pthread_mutex_unlock(&big);
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	pthread_mutex_lock(&big);
	if (CH(ch)->users) {
		pthread_mutex_unlock(&big);
		return EBUSY;
	}
	live--;
	pthread_mutex_unlock(&big);
	close(ch->fd);
	close(CH(ch)->wfd);
	free(ch);
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	(void)comp_vector;
	if (cqe < 1 || cqe > MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	struct fake_cq *cq = calloc(1, sizeof(*cq));
	struct ibv_wc *ring = calloc(cqe, sizeof(*ring));
	if (!cq || !ring) {
		free(cq);
		free(ring);
		errno = ENOMEM;
		return NULL;
	}
	cq->cq.context = ctx;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = cqe;
	cq->ring = ring;
	pthread_mutex_lock(&big);
	if (channel)
		CH(channel)->users++;
	live++;
	pthread_mutex_unlock(&big);
	return &cq->cq;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct fake_cq *cq = CQ(ibcq);
	pthread_mutex_lock(&big);
	/* A real adapter refuses while queue pairs use the queue, and libibverbs
	 * waits for every event taken from the channel to be acknowledged. */
	if (cq->users || cq->acked != cq->events) {
		pthread_mutex_unlock(&big);
		return EBUSY;
	}
	if (cq->cq.channel)
		CH(cq->cq.channel)->users--;
	live--;
	pthread_mutex_unlock(&big);
	free(cq->ring);
	free(cq);
	return 0;
}

/* Queues a completion (lock held) and raises the channel's event if armed. */
static void complete(struct ibv_cq *ibcq, struct ibv_wc wc)
{
	struct fake_cq *cq = CQ(ibcq);
	if (cq->count == cq->cq.cqe) {
		cq->overrun = 1;
		return;
	}
	cq->ring[(cq->head + cq->count) % cq->cq.cqe] = wc;
	cq->count++;
	if (cq->armed && cq->cq.channel) {
		struct fake_channel *ch = CH(cq->cq.channel);
		cq->armed = 0;
		if (ch->count < 64) {
			ch->events[(ch->head + ch->count) % 64] = ibcq;
			ch->count++;
			char b = 1;
			if (write(ch->wfd, &b, 1) != 1)
				ch->count--;
		}
	}
}

static int fake_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct fake_cq *cq = CQ(ibcq);
	int got = 0;
	pthread_mutex_lock(&big);
	if (cq->overrun) {
		pthread_mutex_unlock(&big);
		return -EOVERFLOW;
	}
	while (got < n && cq->count > 0) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cq.cqe;
		cq->count--;
	}
	pthread_mutex_unlock(&big);
	return got;
}

static int fake_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	(void)solicited_only;
	pthread_mutex_lock(&big);
	CQ(ibcq)->armed = 1;
	pthread_mutex_unlock(&big);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	char b;
	/* Blocks unless the caller made the descriptor non-blocking. */
	if (read(ch->fd, &b, 1) != 1)
		return -1;
	pthread_mutex_lock(&big);
	struct fake_channel *c = CH(ch);
	if (c->count == 0) {
		pthread_mutex_unlock(&big);
		errno = EAGAIN;
		return -1;
	}
	*cq = c->events[c->head];
	c->head = (c->head + 1) % 64;
	c->count--;
	CQ(*cq)->events++;
	*cq_context = (*cq)->cq_context;
	pthread_mutex_unlock(&big);
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	pthread_mutex_lock(&big);
	CQ(cq)->acked += n;
	pthread_mutex_unlock(&big);
}

/* ---- queue pairs -------------------------------------------------------- */

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	if (ia->qp_type != QPT_RC || !ia->send_cq || !ia->recv_cq || ia->srq ||
	    ia->cap.max_send_wr < 1 || ia->cap.max_send_wr > MAX_QP_WR ||
	    ia->cap.max_recv_wr < 1 || ia->cap.max_recv_wr > MAX_QP_WR ||
	    ia->cap.max_send_sge > 4 || ia->cap.max_recv_sge > 1 ||
	    ia->send_cq->context != pd->context || ia->recv_cq->context != pd->context) {
		errno = EINVAL;
		return NULL;
	}
	struct fake_qp *q = calloc(1, sizeof(*q));
	struct recv_slot *rq = calloc(ia->cap.max_recv_wr, sizeof(*rq));
	if (!q || !rq) {
		free(q);
		free(rq);
		errno = ENOMEM;
		return NULL;
	}
	q->qp.context = pd->context;
	q->qp.qp_context = ia->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = ia->send_cq;
	q->qp.recv_cq = ia->recv_cq;
	q->qp.state = QPS_RESET;
	q->qp.qp_type = QPT_RC;
	q->max_send = ia->cap.max_send_wr;
	q->max_recv = ia->cap.max_recv_wr;
	q->rq = rq;
	pthread_mutex_lock(&big);
	q->qp.qp_num = next_qpn++;
	q->next = qps;
	qps = q;
	PD(pd)->users++;
	CQ(ia->send_cq)->users++;
	CQ(ia->recv_cq)->users++;
	live++;
	pthread_mutex_unlock(&big);
	return &q->qp;
}

/* Flushes the posted receives of a queue pair in error (lock held). */
static void flush_recv(struct fake_qp *q)
{
	while (q->rq_count) {
		struct recv_slot *s = &q->rq[q->rq_head];
		struct ibv_wc wc = { .wr_id = s->wr_id, .status = WC_FLUSH,
				     .opcode = 0xdead, .qp_num = q->qp.qp_num };
		complete(q->qp.recv_cq, wc);
		q->rq_head = (q->rq_head + 1) % q->max_recv;
		q->rq_count--;
	}
}

static void to_error(struct fake_qp *q)
{
	q->qp.state = QPS_ERR;
	flush_recv(q);
}

/* Whether `mask` has every bit of `need` and none outside `need | may`. */
static int mask_ok(int mask, int need, int may)
{
	return (mask & need) == need && (mask & ~(need | may)) == 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct fake_qp *q = QP(qp);
	int rc = 0;
	pthread_mutex_lock(&big);
	uint32_t cur = q->qp.state;
	uint32_t next = (mask & M_STATE) ? a->qp_state : cur;
	if (next == QPS_ERR && mask == M_STATE) {
		to_error(q);
	} else if (next == QPS_RESET && mask == M_STATE) {
		q->qp.state = QPS_RESET;
		q->rq_count = 0;
	} else if (cur == QPS_RESET && next == QPS_INIT) {
		if (!mask_ok(mask, M_STATE | M_PKEY | M_PORT | M_ACCESS, 0) ||
		    a->port_num != 1 || a->pkey_index != 0)
			rc = EINVAL;
		else {
			q->access = a->qp_access_flags;
			q->qp.state = QPS_INIT;
		}
	} else if (cur == QPS_INIT && next == QPS_INIT) {
		/* librdmacm refreshes the rights this way before RTR. */
		if (!mask_ok(mask, M_STATE, M_PKEY | M_PORT | M_ACCESS) ||
		    ((mask & M_PORT) && a->port_num != 1) || ((mask & M_PKEY) && a->pkey_index != 0))
			rc = EINVAL;
		else if (mask & M_ACCESS)
			q->access = a->qp_access_flags;
	} else if (cur == QPS_INIT && next == QPS_RTR) {
		int need = M_STATE | M_AV | M_MTU | M_DEST_QPN | M_RQ_PSN |
			   M_MAX_DEST_RD | M_MIN_RNR;
		struct ibv_ah_attr *ah = &a->ah_attr;
		if (!mask_ok(mask, need, M_ALT_PATH | M_ACCESS | M_PKEY) ||
		    a->path_mtu < 1 || a->path_mtu > MTU_4096 || ah->port_num != 1 ||
		    a->dest_qp_num == 0 || a->dest_qp_num > 0xffffff || a->rq_psn > 0xffffff)
			rc = EINVAL;
		else if (cfg_eth && !ah->is_global)
			rc = EINVAL; /* RoCE has no LIDs: a GRH is mandatory */
		else if (ah->is_global &&
			 (memcmp(ah->grh.dgid.raw, port_gid, 16) != 0 || ah->grh.sgid_index != 0 ||
			  ah->grh.hop_limit == 0))
			rc = EINVAL; /* unreachable GID, or an empty source GID entry */
		else if (!ah->is_global && ah->dlid != FAKE_LID)
			rc = EINVAL;
		else {
			q->dest_qpn = a->dest_qp_num;
			q->rq_psn = a->rq_psn;
			q->qp.state = QPS_RTR;
		}
	} else if (cur == QPS_RTR && next == QPS_RTS) {
		int need = M_STATE | M_SQ_PSN | M_TIMEOUT | M_RETRY | M_RNR_RETRY | M_MAX_QP_RD;
		if (!mask_ok(mask, need, M_CUR_STATE | M_ACCESS | M_MIN_RNR | M_ALT_PATH | M_MIG) ||
		    a->sq_psn > 0xffffff || a->retry_cnt > 7 || a->rnr_retry > 7)
			rc = EINVAL;
		else {
			q->sq_psn = a->sq_psn;
			q->qp.state = QPS_RTS;
		}
	} else {
		rc = EINVAL;
	}
	pthread_mutex_unlock(&big);
	return rc;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *ia)
{
	(void)mask;
	pthread_mutex_lock(&big);
	memset(a, 0, sizeof(*a));
	a->qp_state = qp->state;
	a->cur_qp_state = qp->state;
	a->dest_qp_num = QP(qp)->dest_qpn;
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = qp->send_cq;
	ia->recv_cq = qp->recv_cq;
	ia->cap.max_send_wr = QP(qp)->max_send;
	ia->cap.max_recv_wr = QP(qp)->max_recv;
	ia->qp_type = QPT_RC;
	pthread_mutex_unlock(&big);
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct fake_qp *q = QP(qp);
	pthread_mutex_lock(&big);
	for (struct fake_qp **p = &qps; *p; p = &(*p)->next) {
		if (*p == q) {
			*p = q->next;
			break;
		}
	}
	/* A peer connected to it now gets no answer. */
	PD(qp->pd)->users--;
	CQ(qp->send_cq)->users--;
	CQ(qp->recv_cq)->users--;
	live--;
	pthread_mutex_unlock(&big);
	free(q->rq);
	free(q);
	return 0;
}

static struct fake_qp *find_qp(uint32_t num)
{
	for (struct fake_qp *q = qps; q; q = q->next)
		if (q->qp.qp_num == num)
			return q;
	return NULL;
}

/* Executes one send request of `q` (lock held); returns the sender's status. */
static uint32_t execute(struct fake_qp *q, struct ibv_send_wr *wr)
{
	struct fake_qp *d = find_qp(q->dest_qpn);
	if (!d || (d->qp.state != QPS_RTR && d->qp.state != QPS_RTS) ||
	    d->dest_qpn != q->qp.qp_num)
		return WC_RETRY_EXC;
	/* The responder expects the PSN the requester starts from. */
	if (d->rq_psn != q->sq_psn)
		return WC_RETRY_EXC;
	uint64_t len = 0;
	const uint8_t *src = NULL;
	if (wr->num_sge == 1) {
		struct ibv_sge *s = wr->sg_list;
		if (!find_mr(q->qp.pd, s->lkey, 0, s->addr, s->length, 0))
			return WC_LOC_PROT;
		len = s->length;
		src = (const uint8_t *)(uintptr_t)s->addr;
	}
	int imm = wr->opcode == WR_SEND_IMM || wr->opcode == WR_RDMA_WRITE_IMM;
	if (wr->opcode == WR_RDMA_WRITE || wr->opcode == WR_RDMA_WRITE_IMM) {
		uint64_t raddr = wr->wr.rdma.remote_addr;
		if (len > 0 && (!(d->access & ACC_REMOTE_WRITE) ||
				!find_mr(d->qp.pd, wr->wr.rdma.rkey, 1, raddr, len,
					 ACC_REMOTE_WRITE))) {
			to_error(d);
			return WC_REM_ACCESS;
		}
		if (imm && d->rq_count == 0)
			return WC_RNR_RETRY_EXC;
		if (len > 0)
			memcpy((void *)(uintptr_t)raddr, src, len);
		if (imm) {
			struct recv_slot *s = &d->rq[d->rq_head];
			struct ibv_wc wc = { .wr_id = s->wr_id, .status = WC_SUCCESS,
					     .opcode = OP_RECV_RDMA_IMM, .byte_len = (uint32_t)len,
					     .imm_data = wr->imm_data, .qp_num = d->qp.qp_num,
					     .src_qp = q->qp.qp_num, .wc_flags = WC_WITH_IMM };
			d->rq_head = (d->rq_head + 1) % d->max_recv;
			d->rq_count--;
			complete(d->qp.recv_cq, wc);
		}
		return WC_SUCCESS;
	}
	if (wr->opcode != WR_SEND && wr->opcode != WR_SEND_IMM)
		return WC_REM_INV_REQ;
	if (d->rq_count == 0)
		return WC_RNR_RETRY_EXC;
	struct recv_slot *s = &d->rq[d->rq_head];
	struct ibv_wc wc = { .wr_id = s->wr_id, .opcode = OP_RECV, .qp_num = d->qp.qp_num,
			     .src_qp = q->qp.qp_num };
	uint32_t ours = WC_SUCCESS;
	if (len > (s->has_sge ? s->sge.length : 0)) {
		wc.status = WC_LOC_LEN;
		ours = WC_REM_INV_REQ;
	} else if (len > 0 && !find_mr(d->qp.pd, s->sge.lkey, 0, s->sge.addr, len,
				       ACC_LOCAL_WRITE)) {
		wc.status = WC_LOC_PROT;
		ours = WC_REM_OP;
	} else {
		if (len > 0)
			memcpy((void *)(uintptr_t)s->sge.addr, src, len);
		wc.status = WC_SUCCESS;
		wc.byte_len = (uint32_t)len;
		if (imm) {
			wc.imm_data = wr->imm_data;
			wc.wc_flags = WC_WITH_IMM;
		}
	}
	d->rq_head = (d->rq_head + 1) % d->max_recv;
	d->rq_count--;
	complete(d->qp.recv_cq, wc);
	if (ours != WC_SUCCESS)
		to_error(d);
	return ours;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fake_qp *q = QP(qp);
	pthread_mutex_lock(&big);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > 1 || wr->opcode > WR_SEND_IMM ||
		    (q->qp.state != QPS_RTS && q->qp.state != QPS_ERR)) {
			*bad = wr;
			pthread_mutex_unlock(&big);
			return EINVAL;
		}
		uint32_t status = q->qp.state == QPS_ERR ? WC_FLUSH : execute(q, wr);
		if (status != WC_SUCCESS && q->qp.state != QPS_ERR)
			to_error(q);
		if (status != WC_SUCCESS || (wr->send_flags & SEND_SIGNALED)) {
			int write = wr->opcode == WR_RDMA_WRITE || wr->opcode == WR_RDMA_WRITE_IMM;
			struct ibv_wc wc = { .wr_id = wr->wr_id, .status = status,
					     .opcode = write ? OP_RDMA_WRITE : OP_SEND,
					     .qp_num = q->qp.qp_num };
			/* byte_len is undefined for sends: leave garbage-like data. */
			wc.byte_len = 0xdeadbeef;
			complete(q->qp.send_cq, wc);
		}
	}
	pthread_mutex_unlock(&big);
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fake_qp *q = QP(qp);
	pthread_mutex_lock(&big);
	for (; wr; wr = wr->next) {
		if (q->qp.state == QPS_RESET || wr->num_sge < 0 || wr->num_sge > 1 ||
		    q->rq_count == q->max_recv) {
			*bad = wr;
			pthread_mutex_unlock(&big);
			return q->rq_count == q->max_recv ? ENOMEM : EINVAL;
		}
		struct recv_slot *s = &q->rq[(q->rq_head + q->rq_count) % q->max_recv];
		s->wr_id = wr->wr_id;
		s->has_sge = wr->num_sge == 1;
		if (s->has_sge)
			s->sge = wr->sg_list[0];
		q->rq_count++;
		if (q->qp.state == QPS_ERR)
			flush_recv(q);
	}
	pthread_mutex_unlock(&big);
	return 0;
}

/* ---- for the tests ------------------------------------------------------ */

/* ---- asynchronous events -------------------------------------------- */

/* Takes the next event of `ctx`: blocks on the pipe unless it was made
 * non-blocking (then -1 with EAGAIN when there is none), as libibverbs
 * reads the kernel's async descriptor. */
int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct fake_ctx *fc = (struct fake_ctx *)ctx;
	char b;
	if (read(ctx->async_fd, &b, 1) != 1)
		return -1;
	pthread_mutex_lock(&big);
	if (!fc->count) {
		pthread_mutex_unlock(&big);
		errno = EAGAIN;
		return -1;
	}
	*ev = fc->q[fc->head];
	fc->head = (fc->head + 1) % 64;
	fc->count--;
	async_unacked++;
	pthread_mutex_unlock(&big);
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev;
	pthread_mutex_lock(&big);
	async_unacked--;
	pthread_mutex_unlock(&big);
}

static void queue_async(struct fake_ctx *fc, struct ibv_async_event ev)
{
	if (fc->count == 64)
		return;
	fc->q[(fc->head + fc->count) % 64] = ev;
	fc->count++;
	char b = 1;
	if (write(fc->wfd, &b, 1) != 1)
		fc->count--;
}

/* Queues an event of type `type` (enum ibv_event_type): 1 to 3 (QP_FATAL,
 * QP_REQ_ERR, QP_ACCESS_ERR) name queue pair `qp_num`, which goes to the
 * error state, on its context; 9 to 11 (PORT_ACTIVE, PORT_ERR, LID_CHANGE)
 * name `port`; others (DEVICE_FATAL 8) name nothing. Returns the number of
 * contexts that got it. */
int fake_ibv_inject_async_event(unsigned int type, uint32_t qp_num, int port)
{
	int n = 0;
	pthread_mutex_lock(&big);
	struct ibv_async_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.event_type = type;
	if (type >= 1 && type <= 3) {
		struct fake_qp *q = find_qp(qp_num);
		if (q) {
			to_error(q);
			ev.element.qp = &q->qp;
			queue_async((struct fake_ctx *)q->qp.context, ev);
			n = 1;
		}
	} else {
		if (type >= 9 && type <= 11)
			ev.element.port_num = port;
		for (struct fake_ctx *fc = ctxs; fc; fc = fc->next, n++)
			queue_async(fc, ev);
	}
	pthread_mutex_unlock(&big);
	return n;
}

/* Asynchronous events taken and not yet acknowledged. */
long fake_ibv_async_events_unacked(void)
{
	pthread_mutex_lock(&big);
	long n = async_unacked;
	pthread_mutex_unlock(&big);
	return n;
}

/* Objects not yet destroyed (contexts, domains, regions, channels, queues,
 * queue pairs). */
long fake_ibv_live_objects(void)
{
	pthread_mutex_lock(&big);
	long n = live;
	pthread_mutex_unlock(&big);
	return n;
}

#define SIZE(t) { "sizeof " #t, sizeof(struct t) }
#define OFF(t, f) { #t "." #f, offsetof(struct t, f) }

static const struct {
	const char *name;
	size_t value;
} layout[] = {
	SIZE(ibv_context_ops), OFF(ibv_context_ops, poll_cq), OFF(ibv_context_ops, req_notify_cq),
	OFF(ibv_context_ops, post_send), OFF(ibv_context_ops, post_recv),
	SIZE(ibv_context), OFF(ibv_context, ops),
	SIZE(ibv_device_attr), OFF(ibv_device_attr, max_mr_size), OFF(ibv_device_attr, max_qp_wr),
	OFF(ibv_device_attr, max_cqe), OFF(ibv_device_attr, max_mr),
	OFF(ibv_device_attr, phys_port_cnt),
	SIZE(ibv_port_attr), OFF(ibv_port_attr, active_mtu), OFF(ibv_port_attr, gid_tbl_len),
	OFF(ibv_port_attr, max_msg_sz), OFF(ibv_port_attr, lid), OFF(ibv_port_attr, link_layer),
	SIZE(ibv_pd), SIZE(ibv_mr), OFF(ibv_mr, addr), OFF(ibv_mr, lkey), OFF(ibv_mr, rkey),
	SIZE(ibv_comp_channel), OFF(ibv_comp_channel, fd),
	SIZE(ibv_cq), OFF(ibv_cq, context), OFF(ibv_cq, channel),
	SIZE(ibv_qp), OFF(ibv_qp, context), OFF(ibv_qp, qp_num), OFF(ibv_qp, state),
	SIZE(ibv_qp_init_attr), OFF(ibv_qp_init_attr, cap), OFF(ibv_qp_init_attr, qp_type),
	OFF(ibv_qp_init_attr, sq_sig_all),
	SIZE(ibv_global_route), OFF(ibv_global_route, sgid_index), OFF(ibv_global_route, hop_limit),
	SIZE(ibv_ah_attr), OFF(ibv_ah_attr, dlid), OFF(ibv_ah_attr, is_global),
	OFF(ibv_ah_attr, port_num),
	SIZE(ibv_qp_attr), OFF(ibv_qp_attr, rq_psn), OFF(ibv_qp_attr, sq_psn),
	OFF(ibv_qp_attr, dest_qp_num), OFF(ibv_qp_attr, qp_access_flags),
	OFF(ibv_qp_attr, ah_attr), OFF(ibv_qp_attr, pkey_index), OFF(ibv_qp_attr, max_rd_atomic),
	OFF(ibv_qp_attr, max_dest_rd_atomic), OFF(ibv_qp_attr, min_rnr_timer),
	OFF(ibv_qp_attr, port_num), OFF(ibv_qp_attr, timeout), OFF(ibv_qp_attr, retry_cnt),
	OFF(ibv_qp_attr, rnr_retry),
	SIZE(ibv_sge), SIZE(ibv_send_wr), OFF(ibv_send_wr, next), OFF(ibv_send_wr, sg_list),
	OFF(ibv_send_wr, num_sge), OFF(ibv_send_wr, opcode), OFF(ibv_send_wr, send_flags),
	OFF(ibv_send_wr, imm_data), OFF(ibv_send_wr, wr),
	SIZE(ibv_recv_wr), OFF(ibv_recv_wr, num_sge),
	SIZE(ibv_wc), OFF(ibv_wc, status), OFF(ibv_wc, opcode), OFF(ibv_wc, byte_len),
	OFF(ibv_wc, imm_data), OFF(ibv_wc, qp_num), OFF(ibv_wc, wc_flags),
	SIZE(ibv_async_event), OFF(ibv_async_event, event_type),
};

/* The size ("sizeof ibv_wc") or offset ("ibv_wc.status") named, or -1. */
long fake_ibv_layout(const char *name)
{
	for (size_t i = 0; i < sizeof(layout) / sizeof(layout[0]); i++)
		if (strcmp(layout[i].name, name) == 0)
			return (long)layout[i].value;
	return -1;
}
