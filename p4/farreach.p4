/* FarReach-style in-switch write-back cache for Tofino (TNA, P4_16).
 *
 * Packets: Ethernet / IPv4 / UDP / KV header of docs/protocol.md (+ value).
 * Clients send requests to the switch service port KV_UDP_PORT; server
 * worker i listens on KV_SERVER_PORT_BASE + i and replies to the client's
 * address, through this switch.
 *
 * Ingress: CRC-32 partition (range on the top 32 key bits or hash bucket,
 * one range table), cache lookup (exact 16-byte key -> cache index), entry
 * state / dirty / seq / vallen registers, per-bucket write sequence
 * counters, count-min sketch + threshold hot-key digest.
 * Egress: the VALUE_WORDS value registers (read on a GET hit, written on a
 * PUT hit), spread over the egress stages.
 *
 * Consistency rules (model/switch.py explains why each is needed; the
 * reference model and this program take the same decisions):
 *  - every client PUT/DEL gets seq = ++bucket_seq[crc32(key) % HASH_BUCKETS];
 *  - VALID entry: GET/PUT/DEL answered here, writes set dirty;
 *    EVICTING: GET answered, writes dropped (client retries);
 *    POPULATING: GET forwarded, writes dropped;
 *  - a server's PUT/DEL reply is dropped if its key is POPULATING or cached
 *    with an older seq (the LOAD may have missed that write);
 *  - a PUT hit whose value is not whole words is dropped and reported
 *    (REPORT_UNCACHEABLE) so the control plane evicts the key.
 *
 * Assumes client and server ports sit in one pipe (the value registers are
 * per pipe), as in a single-pipe rack deployment.
 */
#include <core.p4>
#include <tna.p4>

#include "include/constants.p4"
#include "include/headers.p4"

/* ------------------------------------------------------------------ */
/* Ingress parser: up to the KV header; the value stays payload.      */
/* ------------------------------------------------------------------ */
parser IngressParser(packet_in pkt,
                     out headers_t hdr,
                     out ig_meta_t meta,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port, hdr.udp.src_port) {
            (KV_UDP_PORT, _): parse_kv;                                   /* request */
            (_, KV_SERVER_PORT_BASE &&& KV_SERVER_PORT_MASK): parse_kv;   /* reply   */
            default: accept;
        }
    }
    state parse_kv {
        pkt.extract(hdr.kv);
        transition accept;
    }
}

/* ------------------------------------------------------------------ */
/* Ingress                                                            */
/* ------------------------------------------------------------------ */
control Ingress(inout headers_t hdr,
                inout ig_meta_t meta,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* ---- hashes -------------------------------------------------- */
    Hash<bit<32>>(HashAlgorithm_t.CRC32) crc32_key;
    CRCPolynomial<bit<32>>(CMS_POLY_1, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) cms_poly_1;
    CRCPolynomial<bit<32>>(CMS_POLY_2, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) cms_poly_2;
    CRCPolynomial<bit<32>>(CMS_POLY_3, true, false, false, 32w0xFFFFFFFF, 32w0xFFFFFFFF) cms_poly_3;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, cms_poly_1) cms_hash_1;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, cms_poly_2) cms_hash_2;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, cms_poly_3) cms_hash_3;

    /* ---- per-packet statistics (hits, misses, forwarded, blocked) -- */
    Counter<bit<64>, bit<2>>(4, CounterType_t.PACKETS) kv_stats;

    /* ---- per-bucket write sequence counters ------------------------ */
    Register<bit<32>, bit<HASH_BUCKET_BITS>>(HASH_BUCKETS, 0) bucket_seq_reg;
    RegisterAction<bit<32>, bit<HASH_BUCKET_BITS>, bit<32>>(bucket_seq_reg) bucket_seq_next = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = v + 1;
            rv = v;
        }
    };

    /* ---- cache entry registers -------------------------------------- */
    Register<bit<8>, cache_idx_t>(CACHE_SIZE, ENTRY_INVALID) state_reg;
    RegisterAction<bit<8>, cache_idx_t, bit<8>>(state_reg) state_read = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
        }
    };

    Register<bit<8>, cache_idx_t>(CACHE_SIZE, 0) dirty_reg;
    RegisterAction<bit<8>, cache_idx_t, bit<8>>(dirty_reg) dirty_set = {
        void apply(inout bit<8> v) {
            v = 1;
        }
    };

    Register<bit<32>, cache_idx_t>(CACHE_SIZE, 0) seq_reg;
    RegisterAction<bit<32>, cache_idx_t, bit<32>>(seq_reg) seq_read = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };
    RegisterAction<bit<32>, cache_idx_t, bit<32>>(seq_reg) seq_write = {
        void apply(inout bit<32> v) {
            v = meta.new_seq;
        }
    };
    RegisterAction<bit<32>, cache_idx_t, bit<1>>(seq_reg) seq_reply_newer = {
        void apply(inout bit<32> v, out bit<1> rv) {
            if (meta.seq_in > v) {
                rv = 1;
            } else {
                rv = 0;
            }
        }
    };

    Register<bit<16>, cache_idx_t>(CACHE_SIZE, 0) vallen_reg;
    RegisterAction<bit<16>, cache_idx_t, bit<16>>(vallen_reg) vallen_read = {
        void apply(inout bit<16> v, out bit<16> rv) {
            rv = v;
        }
    };
    RegisterAction<bit<16>, cache_idx_t, bit<16>>(vallen_reg) vallen_write = {
        void apply(inout bit<16> v) {
            v = meta.vallen;
        }
    };

    /* ---- count-min sketch: CMS_ROWS rows of CMS_WIDTH counters ----------
     * Each action reports whether the row's count reaches HOT_THRESHOLD
     * after this increment (tested on the old value, v >= T-1, so the
     * stateful ALU compares before it updates). Counters saturate. */
    Register<bit<CMS_COUNTER_BITS>, bit<CMS_INDEX_BITS>>(CMS_WIDTH, 0) cms_reg_0;
    Register<bit<CMS_COUNTER_BITS>, bit<CMS_INDEX_BITS>>(CMS_WIDTH, 0) cms_reg_1;
    Register<bit<CMS_COUNTER_BITS>, bit<CMS_INDEX_BITS>>(CMS_WIDTH, 0) cms_reg_2;
    Register<bit<CMS_COUNTER_BITS>, bit<CMS_INDEX_BITS>>(CMS_WIDTH, 0) cms_reg_3;
#define CMS_ROW_ACTION(r) \
    RegisterAction<bit<CMS_COUNTER_BITS>, bit<CMS_INDEX_BITS>, bit<1>>(cms_reg_##r) cms_inc_##r = { \
        void apply(inout bit<CMS_COUNTER_BITS> v, out bit<1> hot) { \
            if (v >= HOT_THRESHOLD - 1) { \
                hot = 1; \
            } else { \
                hot = 0; \
            } \
            v = v |+| 1; \
        } \
    };
    CMS_ROW_ACTION(0)
    CMS_ROW_ACTION(1)
    CMS_ROW_ACTION(2)
    CMS_ROW_ACTION(3)

    /* "Already reported this epoch": suppresses repeated digests. */
    Register<bit<1>, bit<REPORT_BLOOM_INDEX_BITS>>(REPORT_BLOOM_BITS, 0) report_bloom_reg;
    RegisterAction<bit<1>, bit<REPORT_BLOOM_INDEX_BITS>, bit<1>>(report_bloom_reg) bloom_test_and_set = {
        void apply(inout bit<1> v, out bit<1> old) {
            old = v;
            v = 1;
        }
    };

    /* ---- actions ------------------------------------------------------ */
    action compute_hashes() {
        meta.crc = crc32_key.get({hdr.kv.keyhi, hdr.kv.keylo});
        meta.seq_in = hdr.kv.seq_le[7:0] ++ hdr.kv.seq_le[15:8] ++
                      hdr.kv.seq_le[23:16] ++ hdr.kv.seq_le[31:24];
    }
    action compute_cms_hashes() {
        meta.cms_h1 = cms_hash_1.get({hdr.kv.keyhi, hdr.kv.keylo});
        meta.cms_h2 = cms_hash_2.get({hdr.kv.keyhi, hdr.kv.keylo});
        meta.cms_h3 = cms_hash_3.get({hdr.kv.keyhi, hdr.kv.keylo});
    }
    /* Row index = low CMS_INDEX_BITS of each CRC (model: crc & 0xFFFF). */
    action compute_cms_indices() {
        meta.cms_idx0 = meta.crc[CMS_INDEX_BITS - 1:0];
        meta.cms_idx1 = meta.cms_h1[CMS_INDEX_BITS - 1:0];
        meta.cms_idx2 = meta.cms_h2[CMS_INDEX_BITS - 1:0];
        meta.cms_idx3 = meta.cms_h3[CMS_INDEX_BITS - 1:0];
    }

    action use_range_partition() {
        meta.part_key = hdr.kv.keyhi[63:32];
    }
    action use_hash_partition() {
        meta.part_key = (bit<32>)meta.crc[HASH_BUCKET_BITS - 1:0];
    }
    /* Installed by the control plane: which partition function is live. */
    table partition_mode_tbl {
        actions = { use_range_partition; use_hash_partition; }
        default_action = use_range_partition();
        size = 1;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }
    action to_server(PortId_t port, bit<48> mac, bit<32> ip, bit<16> udp_port) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
        hdr.udp.dst_port = udp_port;
        hdr.udp.checksum = 0;
    }
    /* One range entry per server: [lo, hi] of the top 32 key bits (range
     * partitioning; the control plane splits [0, 2^31), the space YCSB keys
     * fill, and gives the last server the rest) or of the CRC bucket (hash
     * partitioning). */
    table partition_tbl {
        key = { meta.part_key : range @name("part_key"); }
        actions = { to_server; drop; }
        default_action = drop();
        size = MAX_SERVERS;
    }

    action cache_hit(cache_idx_t idx) {
        meta.idx = idx;
    }
    table cache_lookup_tbl {
        key = {
            hdr.kv.keyhi : exact @name("keyhi");
            hdr.kv.keylo : exact @name("keylo");
        }
        actions = { cache_hit; NoAction; }
        default_action = NoAction();
        size = CACHE_SIZE;
    }

    action set_vmask(bit<32> mask) {
        hdr.bridge.vmask = mask;
    }
    /* words -> bit mask of the value registers egress touches. */
    table value_mask_tbl {
        key = { meta.vwords : exact @name("vwords"); }
        actions = { set_vmask; NoAction; }
        default_action = NoAction();
        size = 64;
        const entries = {
            0 : set_vmask(32w0x00000000);
            1 : set_vmask(32w0x00000001);
            2 : set_vmask(32w0x00000003);
            3 : set_vmask(32w0x00000007);
            4 : set_vmask(32w0x0000000F);
            5 : set_vmask(32w0x0000001F);
            6 : set_vmask(32w0x0000003F);
            7 : set_vmask(32w0x0000007F);
            8 : set_vmask(32w0x000000FF);
            9 : set_vmask(32w0x000001FF);
            10 : set_vmask(32w0x000003FF);
            11 : set_vmask(32w0x000007FF);
            12 : set_vmask(32w0x00000FFF);
            13 : set_vmask(32w0x00001FFF);
            14 : set_vmask(32w0x00003FFF);
            15 : set_vmask(32w0x00007FFF);
            16 : set_vmask(32w0x0000FFFF);
            17 : set_vmask(32w0x0001FFFF);
            18 : set_vmask(32w0x0003FFFF);
            19 : set_vmask(32w0x0007FFFF);
            20 : set_vmask(32w0x000FFFFF);
            21 : set_vmask(32w0x001FFFFF);
            22 : set_vmask(32w0x003FFFFF);
            23 : set_vmask(32w0x007FFFFF);
            24 : set_vmask(32w0x00FFFFFF);
            25 : set_vmask(32w0x01FFFFFF);
            26 : set_vmask(32w0x03FFFFFF);
            27 : set_vmask(32w0x07FFFFFF);
            28 : set_vmask(32w0x0FFFFFFF);
            29 : set_vmask(32w0x1FFFFFFF);
            30 : set_vmask(32w0x3FFFFFFF);
            31 : set_vmask(32w0x7FFFFFFF);
            32 : set_vmask(32w0xFFFFFFFF);
        }
    }

    /* Plain L3 forwarding: server replies to clients, non-KV traffic. */
    action to_host(PortId_t port, bit<48> mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dst_addr = mac;
    }
    table ipv4_host_tbl {
        key = { hdr.ipv4.dst_addr : exact @name("dst_addr"); }
        actions = { to_host; drop; }
        default_action = drop();
        size = 1024;
    }

    /* A server reply leaves with the service address the client used. */
    action set_vip(bit<32> vip, bit<48> vmac) {
        hdr.ipv4.src_addr = vip;
        hdr.ethernet.src_addr = vmac;
        hdr.udp.src_port = KV_UDP_PORT;
        hdr.udp.checksum = 0;
    }
    table vip_tbl {
        actions = { set_vip; }
        default_action = set_vip(0, 0);
        size = 1;
    }

    /* Turn the request into a reply to its sender. */
    action reply_to_client() {
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        bit<48> mac = hdr.ethernet.dst_addr;
        bit<32> ip = hdr.ipv4.dst_addr;
        bit<16> port = hdr.udp.dst_port;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = ip;
        hdr.udp.dst_port = hdr.udp.src_port;
        hdr.udp.src_port = port;
        hdr.udp.checksum = 0;
        hdr.kv.op = hdr.kv.op | OP_REPLY;
        hdr.kv.seq_le = meta.seq_out[7:0] ++ meta.seq_out[15:8] ++
                        meta.seq_out[23:16] ++ meta.seq_out[31:24];
    }
    action get_hit_found() {
        hdr.kv.status = ST_OK;
        hdr.kv.vlen_lo = meta.vallen[7:0];
        hdr.kv.vlen_hi = 0;
        hdr.ipv4.total_len = 16w60 + meta.vallen;
        hdr.udp.len = 16w40 + meta.vallen;
        meta.vwords = (bit<8>)(meta.vallen >> 2);
        hdr.bridge.cache_op = CACHE_OP_READ;
    }
    action get_hit_absent() {
        hdr.kv.status = ST_NOT_FOUND;
        hdr.kv.vlen_lo = 0;
        hdr.kv.vlen_hi = 0;
        hdr.ipv4.total_len = 16w60;
        hdr.udp.len = 16w40;
        meta.vwords = 0;
    }
    /* A write hit: egress stores the carried words, the reply has none. */
    action write_hit() {
        meta.seq_out = meta.new_seq;
        meta.vwords = hdr.kv.vlen_lo >> 2;
        hdr.bridge.vwords = hdr.kv.vlen_lo >> 2;
        hdr.bridge.cache_op = CACHE_OP_WRITE;
        hdr.kv.status = ST_OK;
        hdr.kv.vlen_lo = 0;
        hdr.kv.vlen_hi = 0;
        hdr.ipv4.total_len = 16w60;
        hdr.udp.len = 16w40;
    }
    action stamp_seq() {
        hdr.kv.seq_le = meta.new_seq[7:0] ++ meta.new_seq[15:8] ++
                        meta.new_seq[23:16] ++ meta.new_seq[31:24];
    }
    action report(bit<8> reason) {
        ig_dprsr_md.digest_type = 1;
        meta.reason = reason;
    }

    apply {
        hdr.bridge.setValid();
        hdr.bridge.cache_op = CACHE_OP_NONE;
        hdr.bridge.vwords = 0;
        hdr.bridge.vmask = 0;
        hdr.bridge.pad = 0;
        meta.fwd_by_ip = 1;
        meta.stat_idx = 2;          /* forwarded */

        if (hdr.kv.isValid()) {
            compute_hashes();
            hdr.bridge.idx = 0;
            bool cached = cache_lookup_tbl.apply().hit;
            if (cached) {
                hdr.bridge.idx = meta.idx;
                meta.state = state_read.execute(meta.idx);
            }

            if ((hdr.kv.op & OP_REPLY) == 0) {
                /* ============ request from a client ============ */
                bool is_write = hdr.kv.op == OP_PUT || hdr.kv.op == OP_DEL;
                bool is_client_op = is_write || hdr.kv.op == OP_GET;
                if (is_write) {
                    meta.new_seq = bucket_seq_next.execute(meta.crc[HASH_BUCKET_BITS - 1:0]);
                    stamp_seq();
                }
                bool answered = false;
                if (cached && hdr.kv.op == OP_GET &&
                        (meta.state == ENTRY_VALID || meta.state == ENTRY_EVICTING)) {
                    meta.seq_out = seq_read.execute(meta.idx);
                    meta.vallen = vallen_read.execute(meta.idx);
                    if (meta.vallen == VALLEN_ABSENT) {
                        get_hit_absent();
                    } else {
                        get_hit_found();
                    }
                    reply_to_client();
                    answered = true;
                    meta.fwd_by_ip = 0;
                    meta.stat_idx = 0;      /* hit */
                } else if (cached && is_write) {
                    meta.fwd_by_ip = 0;
                    if (meta.state != ENTRY_VALID || hdr.kv.vlen_hi != 0 ||
                            hdr.kv.vlen_lo > VALUE_BYTES) {
                        drop();             /* blocked while (de)populating */
                        meta.stat_idx = 3;
                    } else if (hdr.kv.op == OP_PUT && hdr.kv.vlen_lo[1:0] != 0) {
                        drop();             /* not whole words: evict first */
                        report(REPORT_UNCACHEABLE);
                        meta.stat_idx = 3;
                    } else {
                        if (hdr.kv.op == OP_PUT) {
                            meta.vallen = (bit<16>)hdr.kv.vlen_lo;
                        } else {
                            meta.vallen = VALLEN_ABSENT;
                        }
                        seq_write.execute(meta.idx);
                        dirty_set.execute(meta.idx);
                        vallen_write.execute(meta.idx);
                        write_hit();
                        reply_to_client();
                        meta.stat_idx = 0;  /* hit */
                    }
                    answered = true;
                }

                if (hdr.bridge.cache_op != CACHE_OP_NONE) {
                    value_mask_tbl.apply();     /* words egress reads or writes */
                }
                if (!answered) {
                    /* Miss (or GET while POPULATING): forward to the owner. */
                    partition_mode_tbl.apply();
                    partition_tbl.apply();
                    meta.fwd_by_ip = 0;
                    if (is_client_op) {
                        meta.stat_idx = 1;  /* miss */
                    }
                    if (is_client_op && !cached) {
                        compute_cms_hashes();
                        compute_cms_indices();
                        meta.hot0 = cms_inc_0.execute(meta.cms_idx0);
                        meta.hot1 = cms_inc_1.execute(meta.cms_idx1);
                        meta.hot2 = cms_inc_2.execute(meta.cms_idx2);
                        meta.hot3 = cms_inc_3.execute(meta.cms_idx3);
                        if (meta.hot0 == 1 && meta.hot1 == 1 && meta.hot2 == 1 && meta.hot3 == 1) {
                            meta.reported = bloom_test_and_set.execute(
                                meta.crc[31:32 - REPORT_BLOOM_INDEX_BITS]);
                            if (meta.reported == 0) {
                                report(REPORT_HOT);
                            }
                        }
                    }
                }
            } else {
                /* ============ reply from a server ============ */
                if (cached && (hdr.kv.op == (OP_PUT | OP_REPLY) ||
                               hdr.kv.op == (OP_DEL | OP_REPLY))) {
                    meta.reply_newer = seq_reply_newer.execute(meta.idx);
                    if (meta.state == ENTRY_POPULATING ||
                            (meta.state != ENTRY_INVALID && meta.reply_newer == 1)) {
                        drop();             /* the LOAD may have missed it */
                        meta.fwd_by_ip = 0;
                        meta.stat_idx = 3;
                    }
                }
                if (meta.fwd_by_ip == 1) {
                    vip_tbl.apply();
                }
            }
        }
        if (meta.fwd_by_ip == 1) {
            ipv4_host_tbl.apply();
        }
        if (hdr.kv.isValid()) {
            kv_stats.count(meta.stat_idx);
        }
    }
}

control IngressDeparser(packet_out pkt,
                        inout headers_t hdr,
                        in ig_meta_t meta,
                        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    Digest<report_digest_t>() report_digest;

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
                hdr.ipv4.total_len, hdr.ipv4.identification,
                hdr.ipv4.flags, hdr.ipv4.frag_offset,
                hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        if (ig_dprsr_md.digest_type == 1) {
            report_digest.pack({hdr.kv.keyhi, hdr.kv.keylo, meta.reason});
        }
        pkt.emit(hdr);
    }
}

/* ------------------------------------------------------------------ */
/* Egress parser: only cache hits need parsing; a write hit carries   */
/* bridge.vwords value words, counted down by the parser counter.     */
/* ------------------------------------------------------------------ */
parser EgressParser(packet_in pkt,
                    out headers_t hdr,
                    out eg_meta_t meta,
                    out egress_intrinsic_metadata_t eg_intr_md) {
    ParserCounter() words_left;

    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.cache_op) {
            CACHE_OP_NONE: accept;
            default: parse_ethernet;
        }
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.kv);
        transition select(hdr.bridge.cache_op, hdr.bridge.vwords) {
            (CACHE_OP_WRITE, 0): accept;
            (CACHE_OP_WRITE, _): parse_value_start;
            default: accept;
        }
    }
    state parse_value_start {
        words_left.set(hdr.bridge.vwords);
        transition parse_value_word;
    }
    state parse_value_word {
        pkt.extract(hdr.vals.next);
        words_left.decrement(1);
        transition select((bit<1>)words_left.is_zero()) {
            1w1: accept;
            default: parse_value_word;
        }
    }
}

/* One value word: a register array and its read / write actions. */
#define VALUE_WORD(i) \
    Register<bit<32>, cache_idx_t>(CACHE_SIZE, 0) val_reg_##i; \
    RegisterAction<bit<32>, cache_idx_t, bit<32>>(val_reg_##i) val_read_##i = { \
        void apply(inout bit<32> v, out bit<32> rv) { \
            rv = v; \
        } \
    }; \
    RegisterAction<bit<32>, cache_idx_t, bit<32>>(val_reg_##i) val_write_##i = { \
        void apply(inout bit<32> v) { \
            v = hdr.vals[i].w; \
        } \
    };

#define VALUE_WORD_APPLY(i) \
    if (hdr.bridge.vmask[i:i] == 1) { \
        if (hdr.bridge.cache_op == CACHE_OP_READ) { \
            hdr.vals[i].setValid(); \
            hdr.vals[i].w = val_read_##i.execute(hdr.bridge.idx); \
        } else { \
            val_write_##i.execute(hdr.bridge.idx); \
            hdr.vals[i].setInvalid(); \
        } \
    }

control Egress(inout headers_t hdr,
               inout eg_meta_t meta,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    VALUE_WORD(0)
    VALUE_WORD(1)
    VALUE_WORD(2)
    VALUE_WORD(3)
    VALUE_WORD(4)
    VALUE_WORD(5)
    VALUE_WORD(6)
    VALUE_WORD(7)
    VALUE_WORD(8)
    VALUE_WORD(9)
    VALUE_WORD(10)
    VALUE_WORD(11)
    VALUE_WORD(12)
    VALUE_WORD(13)
    VALUE_WORD(14)
    VALUE_WORD(15)
    VALUE_WORD(16)
    VALUE_WORD(17)
    VALUE_WORD(18)
    VALUE_WORD(19)
    VALUE_WORD(20)
    VALUE_WORD(21)
    VALUE_WORD(22)
    VALUE_WORD(23)
    VALUE_WORD(24)
    VALUE_WORD(25)
    VALUE_WORD(26)
    VALUE_WORD(27)
    VALUE_WORD(28)
    VALUE_WORD(29)
    VALUE_WORD(30)
    VALUE_WORD(31)

    apply {
        if (hdr.bridge.cache_op != CACHE_OP_NONE) {
            VALUE_WORD_APPLY(0)
            VALUE_WORD_APPLY(1)
            VALUE_WORD_APPLY(2)
            VALUE_WORD_APPLY(3)
            VALUE_WORD_APPLY(4)
            VALUE_WORD_APPLY(5)
            VALUE_WORD_APPLY(6)
            VALUE_WORD_APPLY(7)
            VALUE_WORD_APPLY(8)
            VALUE_WORD_APPLY(9)
            VALUE_WORD_APPLY(10)
            VALUE_WORD_APPLY(11)
            VALUE_WORD_APPLY(12)
            VALUE_WORD_APPLY(13)
            VALUE_WORD_APPLY(14)
            VALUE_WORD_APPLY(15)
            VALUE_WORD_APPLY(16)
            VALUE_WORD_APPLY(17)
            VALUE_WORD_APPLY(18)
            VALUE_WORD_APPLY(19)
            VALUE_WORD_APPLY(20)
            VALUE_WORD_APPLY(21)
            VALUE_WORD_APPLY(22)
            VALUE_WORD_APPLY(23)
            VALUE_WORD_APPLY(24)
            VALUE_WORD_APPLY(25)
            VALUE_WORD_APPLY(26)
            VALUE_WORD_APPLY(27)
            VALUE_WORD_APPLY(28)
            VALUE_WORD_APPLY(29)
            VALUE_WORD_APPLY(30)
            VALUE_WORD_APPLY(31)
        }
        hdr.bridge.setInvalid();
    }
}

control EgressDeparser(packet_out pkt,
                       inout headers_t hdr,
                       in eg_meta_t meta,
                       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr);
    }
}

Pipeline(IngressParser(), Ingress(), IngressDeparser(),
         EgressParser(), Egress(), EgressDeparser()) pipe;

Switch(pipe) main;
