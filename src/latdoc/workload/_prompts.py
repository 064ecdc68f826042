"""Prompts of an exact token length, as the endpoint itself counts tokens.

A prompt is a run of common English words, each one token in the BPE
vocabularies of the major model families when preceded by a space. The words
are drawn at random from 309, so the first eight alone make 309**8 different
starts: no two prompts share a prefix and no prefix cache can answer one.

How many words make a prompt of N tokens on a given endpoint is learned by
:mod:`latdoc.workload._calibration`.
"""

from __future__ import annotations

import random

WORDS = (
    "the of and to in is was for on are with as his they be at one have this from "
    "or had by word but what some we can out other were all there when up use your "
    "how said an each she which do their time if will way about many then them write "
    "would like so these her long make thing see him two has look more day could go "
    "come did number sound no most people my over know water than call first who may "
    "down side been now find any new work part take get place made live where after "
    "back little only round man year came show every good me give our under name very "
    "through just form great think say help low line before turn cause same mean "
    "differ move right boy old too does tell set three want air well also play small "
    "end put home read hand port large spell add even land here must big high such "
    "follow act why ask men change went light kind off need house picture try us "
    "again animal point mother world near build self earth father head stand own page "
    "should country found answer school grow study still learn plant cover food sun "
    "four thought let keep eye never last door between city tree cross since hard "
    "start might story saw far sea draw left late run while press close night real "
    "life few stop open seem together next white children begin got walk example ease "
    "paper often always music those both mark book letter until mile river car feet "
    "care second group carry took rain eat room friend began idea fish mountain north "
    "once base hear horse cut sure watch color face wood main enough plain girl usual "
    "young ready above ever red list though feel talk bird soon body dog family direct"
).split()


def make_prompt(words: int, rng: random.Random) -> str:
    """``words`` common words drawn at random (so its start is unique)."""
    if words < 1:
        raise ValueError("a prompt needs at least one word")
    return " ".join(rng.choices(WORDS, k=words))
